// posenc Python bindings (the `posenc._posenc` extension module): posenc's no-throw `try_` entry points over the
// caller's arrays, zero-copy. An array argument (NumPy, PyTorch or any DLPack producer on the CPU) becomes a
// posenc::strided_view of the same memory with the array's element strides; a layout name only permutes those
// strides. Every posenc::status that is not ok becomes a Python exception carrying its message (ValueError for
// invalid_argument and invalid_file, OSError for io_error, MemoryError for out_of_memory); posenc validates
// every argument before it writes anything, so a rejected call leaves the arrays as they were. The GIL is
// released while a posenc call runs. This layer is deliberately strict (no conversions, no allocation of
// outputs): posenc/__init__.py is the documented Pythonic API over it.
#include "common.hpp"

NB_MODULE(_posenc, m) {
  using namespace pyposenc;
  m.doc() = "posenc's C++ kernels over NumPy/PyTorch/DLPack arrays, zero-copy (low-level; use the posenc package).";
  m.attr("__version__") = POSENC_VERSION_STRING;

  // ---- ISA dispatch
  m.def("isa", [] { return std::string(posenc::isa_name(posenc::active_isa())); },
        "The instruction set of the kernels posenc runs now: 'scalar', 'avx2', 'avx512' or 'neon'.");
  m.def("set_isa", [](const std::string& name) { return std::string(posenc::isa_name(posenc::set_isa(parse_enum<posenc::isa>(name, "set_isa", "isa")))); },
        nb::arg("name"), "Caps the kernels at `name`; returns the ISA now active (the widest supported below it).");
  m.def("reset_isa", [] { return std::string(posenc::isa_name(posenc::reset_isa())); },
        "Back to the default ISA (POSENC_ISA if set, else the widest the CPU supports); returns it.");
  m.def("cpu_supports", [](const std::string& name) { return posenc::cpu_supports(parse_enum<posenc::isa>(name, "cpu_supports", "isa")); },
        nb::arg("name"), "Whether this CPU and OS can run posenc's kernels for the named ISA.");

  bind_plans(m);
  bind_rope(m);
  bind_mrope(m);
  bind_xpos(m);
  bind_alibi(m);
  bind_sinusoidal(m);
  bind_t5(m);
  bind_modules(m);
  bind_quant(m);
}
