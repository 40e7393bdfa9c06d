// libFuzzer target for the .npy reader (include/posenc/io/npy.hpp). Any input must either parse into an array
// whose data size matches its shape and dtype, or be rejected with posenc::argument_error: no crash, no
// sanitizer report, no other exception, no allocation beyond the input's size.
//
// Build and run: bash scripts/fuzz.sh npy [seconds]   (clang, -fsanitize=fuzzer,address,undefined)
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include <posenc/io/npy.hpp>
#include <posenc/io/npy_tensors.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const posenc::npy_array a = posenc::parse_npy(data, size);
    // Invariants of an accepted array.
    if (a.data.size() != static_cast<std::size_t>(a.size() * a.itemsize())) std::abort();
    if (a.data.size() > size) std::abort();
    for (posenc::index_t d : a.shape)
      if (d < 0) std::abort();
    // The typed conversions must accept it or reject it cleanly too.
    posenc::npy_array flat = a;
    flat.shape = {a.size()};
    if (a.dtype[1] == 'f') (void)posenc::npy_to_tensor<float, 1>(flat);
    else (void)posenc::npy_to_tensor<std::int64_t, 1>(flat);
  } catch (const posenc::argument_error&) {
  }
  return 0;
}
