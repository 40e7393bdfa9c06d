#define WORK_NAME work_default
#include "work.inl"
