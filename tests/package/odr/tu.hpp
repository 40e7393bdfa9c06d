// The same work in both translation units: RoPE (cache-free and cached), xPos, ALiBi and a sinusoidal add.
#pragma once
#include <vector>

std::vector<float> work_default();
std::vector<float> work_avx2();
