// posenc/io/npy.hpp and posenc/io/npy_tensors.hpp: round trips for every dtype and format version, byte
// equality with numpy's np.save, the typed Eigen helpers, table load/save of the learned modules, the atomic
// write, one crafted input per kind of rejected file, and the no-throw try_ forms (same results, same messages,
// error codes, outputs untouched).
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <posenc/error.hpp>
#include <posenc/learned.hpp>
#include <posenc/io/npy.hpp>
#include <posenc/io/npy_tensors.hpp>
#include <posenc/t5_bias.hpp>

#include "messages.hpp"
#include "scratch.hpp"

namespace {

using posenc::index_t;
using posenc_test::bytes_t;
using posenc_test::file_exists;
using posenc_test::read_bytes;
using posenc_test::scratch_path;
using posenc_test::write_bytes;

/// A .npy image with the given version and header text (padded as numpy does unless raw) and data bytes.
bytes_t craft(int major, const std::string& header, const bytes_t& data, bool pad = true) {
  std::string h = header;
  const std::size_t prelude = major == 1 ? 10 : 12;
  if (pad) {
    h.append((64 - (prelude + h.size() + 1) % 64) % 64, ' ');
    h += '\n';
  }
  bytes_t b = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<unsigned char>(major), 0};
  b.push_back(static_cast<unsigned char>(h.size() & 0xff));
  b.push_back(static_cast<unsigned char>((h.size() >> 8) & 0xff));
  if (major != 1) {
    b.push_back(static_cast<unsigned char>((h.size() >> 16) & 0xff));
    b.push_back(static_cast<unsigned char>((h.size() >> 24) & 0xff));
  }
  b.insert(b.end(), h.begin(), h.end());
  b.insert(b.end(), data.begin(), data.end());
  return b;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

using posenc_test::thrown_message;

/// An array no call here produces: what an out-parameter holds before a rejected try_ call, and after it.
posenc::npy_array sentinel_array() {
  posenc::npy_array a;
  a.dtype = "<i8";
  a.shape = {1};
  a.data.assign(8, 0xab);
  return a;
}

void expect_same(const posenc::npy_array& a, const posenc::npy_array& b, const std::string& what) {
  EXPECT_EQ(a.dtype, b.dtype) << what;
  EXPECT_EQ(a.shape, b.shape) << what;
  EXPECT_EQ(a.data, b.data) << what;
}

/// `msg` with the temporary file's name made unique per call (".tmp-<address>-<counter>") as ".tmp-*".
std::string without_tmp_id(std::string msg) {
  const std::size_t at = msg.find(".tmp-");
  if (at == std::string::npos) return msg;
  std::size_t end = at + 5;
  while (end < msg.size() && (std::isdigit(static_cast<unsigned char>(msg[end])) || msg[end] == '-')) ++end;
  return msg.replace(at, end - at, ".tmp-*");
}

/// A rejected try_ call: not ok, `code`, the throwing form's message (a write's temporary name aside).
void expect_status(const posenc::status& s, posenc::errc code, const std::string& thrown, const std::string& what) {
  EXPECT_FALSE(s.ok()) << what;
  EXPECT_FALSE(static_cast<bool>(s)) << what;
  EXPECT_EQ(static_cast<int>(s.code()), static_cast<int>(code)) << what << ": " << s.message();
  EXPECT_EQ(without_tmp_id(std::string(s.message())), without_tmp_id(thrown)) << what;
  EXPECT_FALSE(thrown.empty()) << what;
}

// ------------------------------------------------------------------------------------------- round trips

TEST(Npy, RoundTripEveryDtypeAndVersion) {
  const std::vector<std::vector<index_t>> shapes{{}, {0}, {5}, {2, 3}, {2, 0, 4}, {1, 2, 1, 3}};
  for (const char* dtype : {"<f2", "<f4", "<f8", "<i4", "<i8"}) {
    const std::size_t item = static_cast<std::size_t>(dtype[2] - '0');
    for (int version : {0, 1, 2, 3}) {
      for (const auto& shape : shapes) {
        std::size_t n = 1;
        for (auto d : shape) n *= static_cast<std::size_t>(d);
        bytes_t data(n * item);
        for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>((i * 37 + 11) & 0xff);
        const bytes_t img = posenc::serialize_npy(dtype, shape, data.data(), version);
        EXPECT_EQ(img[6], version == 0 ? 1 : version);
        const std::size_t data_at = img.size() - data.size();
        EXPECT_EQ(data_at % 64, 0u) << "data aligned to 64 bytes";
        const posenc::npy_array a = posenc::parse_npy(img.data(), img.size());
        EXPECT_EQ(a.dtype, dtype);
        EXPECT_EQ(a.shape, shape);
        EXPECT_EQ(a.data, data);
        EXPECT_EQ(static_cast<std::size_t>(a.size()), n);
        EXPECT_EQ(static_cast<std::size_t>(a.itemsize()), item);
        // Through a file.
        const std::string p = scratch_path(std::string("rt_") + (dtype + 1) + std::to_string(version) + ".npy");
        posenc::write_npy(p, dtype, shape, data.data(), version);
        const posenc::npy_array f = posenc::read_npy(p);
        EXPECT_EQ(f.dtype, dtype);
        EXPECT_EQ(f.shape, shape);
        EXPECT_EQ(f.data, data);
        std::remove(p.c_str());
      }
    }
  }
}

TEST(Npy, BytesEqualNumpySave) {
  // np.save(f, np.arange(6, dtype='<f4').reshape(2, 3)) with numpy 2.x (and every numpy >= 1.14).
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string padded = header + std::string(118 - header.size() - 1, ' ') + "\n";
  bytes_t want = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0};
  want.insert(want.end(), padded.begin(), padded.end());
  const float v[6] = {0, 1, 2, 3, 4, 5};
  const auto* vb = reinterpret_cast<const unsigned char*>(v);
  want.insert(want.end(), vb, vb + sizeof v);
  ASSERT_EQ(want.size(), 152u);
  EXPECT_EQ(posenc::serialize_npy("<f4", {2, 3}, v), want);
  // numpy's 1-d and scalar shapes: "(2,)" and "()".
  const bytes_t one = posenc::serialize_npy("<f2", {2}, v);
  EXPECT_NE(std::string(one.begin(), one.end()).find("'shape': (2,), }"), std::string::npos);
  const bytes_t scalar = posenc::serialize_npy("<i8", {}, v);
  EXPECT_NE(std::string(scalar.begin(), scalar.end()).find("'shape': (), }"), std::string::npos);
  // Other spellings numpy (and Python 2 era numpy) wrote are read: key order, double quotes, no trailing
  // comma, 'L' suffixes, format 2.0.
  const bytes_t alt = craft(2, "{\"shape\": (2L, 3L), \"fortran_order\": False, \"descr\": \"<f4\"}", bytes_t(vb, vb + 24));
  const auto a = posenc::parse_npy(alt.data(), alt.size());
  EXPECT_EQ(a.shape, (std::vector<index_t>{2, 3}));
}

TEST(Npy, TypedEigenHelpers) {
  // f2 / f4 / f8 into float and double tensors; the half values are exact.
  const std::uint16_t halfs[4] = {0x3e00, 0xc000, 0x0001, 0x7bff};  // 1.5, -2, 2^-24, 65504
  const auto h = posenc::parse_npy(posenc::serialize_npy("<f2", {2, 2}, halfs).data(), 128 + 8);
  const auto th = posenc::npy_to_tensor<double, 2>(h);
  EXPECT_EQ(th(0, 0), 1.5);
  EXPECT_EQ(th(0, 1), -2.0);
  EXPECT_EQ(th(1, 0), std::ldexp(1.0, -24));
  EXPECT_EQ(th(1, 1), 65504.0);
  const double d[3] = {0.1, -3.25, 1e300};
  const auto f8 = posenc::parse_npy(posenc::serialize_npy("<f8", {3}, d).data(), 128 + 24);
  const auto tf = posenc::npy_to_tensor<float, 1>(f8);
  EXPECT_EQ(tf(0), 0.1f);
  EXPECT_EQ(tf(1), -3.25f);
  EXPECT_TRUE(std::isinf(tf(2)));
  const auto tbf = posenc::npy_to_tensor<Eigen::bfloat16, 1>(f8);
  EXPECT_EQ(static_cast<float>(tbf(1)), -3.25f);

  // Integers: i4 -> int64, i8 -> int32 with range check; kinds do not mix.
  const std::int64_t big[2] = {5, std::int64_t{1} << 40};
  const auto i8 = posenc::parse_npy(posenc::serialize_npy("<i8", {2}, big).data(), 128 + 16);
  EXPECT_EQ((posenc::npy_to_tensor<std::int64_t, 1>(i8)(1)), std::int64_t{1} << 40);
  EXPECT_THROW((posenc::npy_to_tensor<std::int32_t, 1>(i8)), posenc::argument_error);
  EXPECT_THROW((posenc::npy_to_tensor<float, 1>(i8)), posenc::argument_error);
  EXPECT_THROW((posenc::npy_to_tensor<std::int64_t, 1>(f8)), posenc::argument_error);
  EXPECT_THROW((posenc::npy_to_tensor<double, 2>(f8)), posenc::argument_error);  // rank

  // write_npy of a tensor and back through the file helpers.
  Eigen::Tensor<float, 3, Eigen::RowMajor> t(2, 3, 4);
  for (index_t i = 0; i < t.size(); ++i) t.data()[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const std::string p = scratch_path("tensor.npy");
  posenc::write_npy(p, t);
  const auto back = posenc::read_npy_tensor<float, 3>(p);
  ASSERT_EQ(back.dimension(0), 2);
  ASSERT_EQ(back.dimension(2), 4);
  for (index_t i = 0; i < t.size(); ++i) EXPECT_EQ(back.data()[i], t.data()[i]);
  Eigen::Tensor<std::int32_t, 1, Eigen::RowMajor> ti(3);
  ti.setValues({-1, 0, 7});
  posenc::write_npy(p, ti, 2);
  const auto ri = posenc::read_npy(p);
  EXPECT_EQ(ri.dtype, "<i4");
  EXPECT_EQ((posenc::npy_to_tensor<std::int64_t, 1>(ri)(0)), -1);
  std::remove(p.c_str());
}

TEST(Npy, LoadSaveModuleTables) {
  posenc::learned_config cfg;
  cfg.max_positions = 10;
  cfg.dim = 6;
  cfg.position_offset = 2;  // OPT: the file holds all 12 rows
  posenc::learned_position_embedding<> a(cfg), b(cfg);
  a.init_normal(7);
  const std::string p = scratch_path("wpe.npy");
  posenc::save_npy_table(p, a);
  const auto raw = posenc::read_npy(p);
  EXPECT_EQ(raw.dtype, "<f4");
  EXPECT_EQ(raw.shape, (std::vector<index_t>{12, 6}));
  posenc::load_npy_table(p, b);
  for (index_t i = 0; i < a.table().size(); ++i) ASSERT_EQ(a.table().data()[i], b.table().data()[i]);
  // A double file into a float table rounds once; into a double table it is exact.
  std::vector<double> d(72);
  for (std::size_t i = 0; i < d.size(); ++i) d[i] = 0.1 * static_cast<double>(i);
  posenc::write_npy(p, "<f8", {12, 6}, d.data());
  posenc::learned_position_embedding<double> c(cfg);
  posenc::load_npy_table(p, c);
  posenc::load_npy_table(p, b);
  EXPECT_EQ(c.table()(11, 5), d[71]);
  EXPECT_EQ(b.table()(11, 5), static_cast<float>(d[71]));
  // Shape or dtype mismatch: rejected, table unchanged.
  const auto before = std::vector<float>(b.table().data(), b.table().data() + b.table().size());
  posenc::write_npy(p, "<f8", {6, 12}, d.data());
  EXPECT_THROW(posenc::load_npy_table(p, b), posenc::argument_error);
  std::vector<std::int32_t> ints(72, 1);
  posenc::write_npy(p, "<i4", {12, 6}, ints.data());
  EXPECT_THROW(posenc::load_npy_table(p, b), posenc::argument_error);
  EXPECT_EQ(before, std::vector<float>(b.table().data(), b.table().data() + b.table().size()));
  // T5's [num_buckets, H] table.
  posenc::t5_relative_bias<double> r(4), s(4);
  r.init_normal(3);
  posenc::save_npy_table(p, r);
  EXPECT_EQ(posenc::read_npy(p).dtype, "<f8");
  posenc::load_npy_table(p, s);
  for (index_t i = 0; i < r.table().size(); ++i) ASSERT_EQ(r.table().data()[i], s.table().data()[i]);
  std::remove(p.c_str());
}

TEST(Npy, WriteIsAtomic) {
  const std::string p = scratch_path("atomic.npy");
  const float v[2] = {1, 2};
  posenc::write_npy(p, "<f4", {2}, v);
  const bytes_t first = read_bytes(p);
  // A rejected write leaves the existing file as it was, and no temporary behind.
  EXPECT_THROW(posenc::write_npy(p, "<c8", {2}, v), posenc::argument_error);
  EXPECT_THROW(posenc::write_npy(p, "<f4", {-2}, v), posenc::argument_error);
  EXPECT_THROW(posenc::write_npy(p, "<f4", {2}, nullptr), posenc::argument_error);
  EXPECT_THROW(posenc::write_npy(p, "<f4", {2}, v, 4), posenc::argument_error);
  EXPECT_EQ(read_bytes(p), first);
  // A directory that does not exist: nothing is created.
  const std::string missing = scratch_path("no_such_dir/x.npy");
  EXPECT_THROW(posenc::write_npy(missing, "<f4", {2}, v), posenc::argument_error);
  EXPECT_FALSE(file_exists(missing));
  // Replacing works.
  const float w[3] = {3, 4, 5};
  posenc::write_npy(p, "<f4", {3}, w);
  EXPECT_EQ(posenc::read_npy(p).shape, (std::vector<index_t>{3}));
  std::remove(p.c_str());
}

// The rename that publishes the file either replaces the target in one step or fails leaving it: an empty
// directory in the way makes rename() fail, and the directory must still be there afterwards (a delete-then-
// rename fallback would have removed it and written the file).
TEST(Npy, FailedRenameLeavesTheTarget) {
  const std::string p = scratch_path("dir_in_the_way.npy");
  ASSERT_EQ(::mkdir(p.c_str(), 0700), 0);
  const float v[2] = {1, 2};
  const posenc::status s = posenc::try_write_npy(p, "<f4", {2}, v);
  EXPECT_EQ(s.code(), posenc::errc::io_error) << s.message();
  EXPECT_NE(s.message().find("cannot rename"), std::string::npos) << s.message();
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(::rmdir(p.c_str()), 0);  // still empty: no temporary left inside or beside it
}

// -------------------------------------------------------------------------------------------------- rejects

// Each crafted input is rejected by parse_npy and, written to a file, by read_npy, with a message naming the
// problem.
// The try_ forms reject it too: invalid_file, the same message, the out-parameter untouched.
void expect_rejected(const bytes_t& img, const std::string& needle) {
  std::string parse_msg, read_msg;
  try {
    posenc::parse_npy(img.data(), img.size());
    ADD_FAILURE() << "parse_npy accepted input that should fail with '" << needle << "'";
  } catch (const posenc::argument_error& e) {
    parse_msg = e.what();
    EXPECT_NE(parse_msg.find(needle), std::string::npos) << "message: " << e.what();
  }
  const std::string p = scratch_path("reject.npy");
  write_bytes(p, img);
  try {
    posenc::read_npy(p);
    ADD_FAILURE() << "read_npy accepted input that should fail with '" << needle << "'";
  } catch (const posenc::argument_error& e) {
    read_msg = e.what();
    EXPECT_NE(read_msg.find(needle), std::string::npos) << "message: " << e.what();
  }
  const posenc::npy_array before = sentinel_array();
  posenc::npy_array out = before;
  expect_status(posenc::try_parse_npy(img.data(), img.size(), out), posenc::errc::invalid_file, parse_msg,
                "try_parse_npy '" + needle + "'");
  expect_same(out, before, "try_parse_npy out");
  expect_status(posenc::try_read_npy(p, out), posenc::errc::invalid_file, read_msg, "try_read_npy '" + needle + "'");
  expect_same(out, before, "try_read_npy out");
  std::remove(p.c_str());
}

const bytes_t k_data24(24, 0);

TEST(NpyRejects, BadMagic) {
  bytes_t b = craft(1, dict("<f4", "(2, 3)"), k_data24);
  b[1] = 'X';
  expect_rejected(b, "bad magic");
}
TEST(NpyRejects, UnsupportedVersion) {
  bytes_t b = craft(1, dict("<f4", "(2, 3)"), k_data24);
  b[6] = 4;
  expect_rejected(b, "version 4.0");
  b[6] = 1;
  b[7] = 1;
  expect_rejected(b, "version 1.1");
}
TEST(NpyRejects, TruncatedPrelude) {
  const bytes_t b = {0x93, 'N', 'U', 'M', 'P', 'Y', 1};
  expect_rejected(b, "truncated");
  const bytes_t v2 = {0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 16, 0, 0};
  expect_rejected(v2, "truncated");
}
TEST(NpyRejects, HeaderLengthPastEndOfFile) {
  bytes_t b = craft(2, dict("<f4", "(2, 3)"), k_data24);
  b[10] = 0xff;  // header length ~16 MiB in a 200-byte file: rejected before allocating it
  b[11] = 0x7f;
  expect_rejected(b, "runs past the end of the file");
  bytes_t c = craft(1, dict("<f4", "(2, 3)"), {});
  c[8] = 0xff;
  c[9] = 0xff;
  expect_rejected(c, "runs past the end of the file");
}
TEST(NpyRejects, TruncatedHeaderDict) {
  expect_rejected(craft(1, "{'descr': '<f4', 'fortran_order': False, ", {}, false), "malformed");
  expect_rejected(craft(1, "{'descr': '<f4", {}, false), "malformed");
  expect_rejected(craft(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, ", {}, false), "malformed");
}
TEST(NpyRejects, MalformedHeader) {
  expect_rejected(craft(1, "['descr', '<f4']", k_data24), "expected '{'");
  expect_rejected(craft(1, "{'descr': '<f4', 'fortran_order': False}", k_data24), "missing key 'shape'");
  expect_rejected(craft(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}", k_data24), "unknown key");
  expect_rejected(craft(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}", k_data24), "duplicate key");
  expect_rejected(craft(1, dict("<f4", "(2, 3)", "false"), k_data24), "True or False");
  expect_rejected(craft(1, dict("<f4", "[2, 3]"), k_data24), "expected '('");
  expect_rejected(craft(1, dict("<f4", "(2 3)"), k_data24), "expected ',' or ')'");
  expect_rejected(craft(1, dict("<f4", "(2, 3)") + " junk", k_data24), "after the header dict");
  expect_rejected(craft(1, "{descr: '<f4'}", k_data24), "quoted string");
}
TEST(NpyRejects, FortranOrder) { expect_rejected(craft(1, dict("<f4", "(2, 3)", "True"), k_data24), "Fortran"); }
TEST(NpyRejects, BigEndian) { expect_rejected(craft(1, dict(">f4", "(2, 3)"), k_data24), "big-endian"); }
TEST(NpyRejects, ObjectDtype) { expect_rejected(craft(1, dict("|O", "(3,)"), k_data24), "object"); }
TEST(NpyRejects, OtherDtypes) {
  for (const char* d : {"<c8", "|b1", "<u2", "|u1", "<f16", "=f4", "<U4", "<M8[ns]"})
    expect_rejected(craft(1, dict(d, "(2, 3)"), k_data24), "not supported");
  expect_rejected(craft(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", k_data24), "structured");
}
TEST(NpyRejects, NegativeDimension) { expect_rejected(craft(1, dict("<f4", "(2, -3)"), k_data24), "negative dimension"); }
TEST(NpyRejects, ShapeByteSizeOverflows) {
  expect_rejected(craft(1, dict("<f8", "(4294967296, 4294967296)"), k_data24), "overflows");
  expect_rejected(craft(1, dict("<f4", "(99999999999999999999,)"), k_data24), "too large");
}
TEST(NpyRejects, ShapeExceedsFile) {
  // 10^12 elements claimed by a file of ~150 bytes: rejected from the header, nothing allocated.
  expect_rejected(craft(1, dict("<f4", "(1000000, 1000000)"), k_data24), "data truncated");
  expect_rejected(craft(1, dict("<f4", "(2, 4)"), k_data24), "data truncated");
}
TEST(NpyRejects, TrailingBytes) { expect_rejected(craft(1, dict("<f4", "(2, 2)"), k_data24), "past the data"); }
TEST(NpyRejects, MissingFile) {
  EXPECT_THROW(posenc::read_npy(scratch_path("does_not_exist.npy")), posenc::argument_error);
  EXPECT_THROW(posenc::parse_npy(nullptr, 10), posenc::argument_error);
  EXPECT_THROW(posenc::parse_npy(nullptr, 0), posenc::argument_error);
}

// --------------------------------------------------------------------------------------------- try_ forms

struct fake_module {
  std::vector<float> t;
  posenc::strided_view<float, 2> table() { return posenc::strided_view<float, 2>(t.data(), {2, 3}); }
  posenc::strided_view<const float, 2> table() const { return posenc::strided_view<const float, 2>(t.data(), {2, 3}); }
};

using tensor2f = Eigen::Tensor<float, 2, Eigen::RowMajor>;
using tensor1i = Eigen::Tensor<std::int32_t, 1, Eigen::RowMajor>;

static_assert(noexcept(posenc::try_parse_npy(nullptr, 0, std::declval<posenc::npy_array&>())));
static_assert(noexcept(posenc::try_read_npy(std::string(), std::declval<posenc::npy_array&>())));
// Arguments as declval (noexcept): a string built from a literal in the expression could throw itself.
template <class T>
using cref = const T&;
static_assert(noexcept(posenc::try_serialize_npy(std::declval<cref<std::string>>(), std::declval<cref<std::vector<index_t>>>(),
                                                 nullptr, 0, std::declval<std::vector<unsigned char>&>())));
static_assert(noexcept(posenc::try_write_npy(std::string(), std::declval<cref<std::string>>(),
                                             std::declval<cref<std::vector<index_t>>>(), nullptr)));
static_assert(noexcept(posenc::try_write_npy(std::string(), std::declval<cref<std::string>>(),
                                             std::declval<cref<std::vector<index_t>>>(), nullptr, 2)));
static_assert(noexcept(posenc::try_write_npy(std::string(), std::declval<const tensor2f&>(), 0)));
static_assert(noexcept(posenc::try_npy_to_tensor(std::declval<const posenc::npy_array&>(), std::declval<tensor2f&>())));
static_assert(noexcept(posenc::try_read_npy_tensor(std::string(), std::declval<tensor1i&>())));
static_assert(noexcept(posenc::try_load_npy_table(std::string(), std::declval<fake_module&>())));
static_assert(noexcept(posenc::try_save_npy_table(std::string(), std::declval<const fake_module&>(), 0)));
static_assert(std::is_same_v<decltype(posenc::try_read_npy(std::string(), std::declval<posenc::npy_array&>())), posenc::status>);

TEST(NpyNoThrow, ParseAndReadMatchTheThrowingForms) {
  const float v[6] = {0, 1, 2, 3, 4, 5};
  const bytes_t img = posenc::serialize_npy("<f4", {2, 3}, v);
  posenc::npy_array a = sentinel_array();
  const posenc::status s = posenc::try_parse_npy(img.data(), img.size(), a);
  EXPECT_TRUE(s.ok());
  EXPECT_TRUE(s.message().empty());
  expect_same(a, posenc::parse_npy(img.data(), img.size()), "try_parse_npy");
  EXPECT_EQ(a.shape, (std::vector<index_t>{2, 3}));

  const std::string p = scratch_path("try_read.npy");
  write_bytes(p, img);
  posenc::npy_array f = sentinel_array();
  EXPECT_TRUE(posenc::try_read_npy(p, f).ok());
  expect_same(f, posenc::read_npy(p), "try_read_npy");
  std::remove(p.c_str());

  // Null bytes: a bad argument; an empty buffer: a truncated file.
  const posenc::npy_array before = sentinel_array();
  posenc::npy_array out = before;
  expect_status(posenc::try_parse_npy(nullptr, 10, out), posenc::errc::invalid_argument,
                thrown_message([] { posenc::parse_npy(nullptr, 10); }), "null bytes");
  EXPECT_EQ(out.dtype, before.dtype);
  expect_status(posenc::try_parse_npy(nullptr, 0, out), posenc::errc::invalid_file,
                thrown_message([] { posenc::parse_npy(nullptr, 0); }), "empty buffer");
  expect_same(out, before, "try_parse_npy(nullptr, 0) out");
  // A missing file: io_error.
  const std::string missing = scratch_path("try_missing.npy");
  expect_status(posenc::try_read_npy(missing, out), posenc::errc::io_error,
                thrown_message([&] { posenc::read_npy(missing); }), "missing file");
  EXPECT_NE(out.dtype.find("<i8"), std::string::npos);
  expect_same(out, before, "try_read_npy(missing) out");
}

TEST(NpyNoThrow, SerializeAndWriteMatchTheThrowingForms) {
  const float v[3] = {1, 2, 3};
  const std::vector<unsigned char> marker{1, 2, 3};
  std::vector<unsigned char> out = marker;
  EXPECT_TRUE(posenc::try_serialize_npy("<f4", {3}, v, 0, out).ok());
  EXPECT_EQ(out, posenc::serialize_npy("<f4", {3}, v));
  EXPECT_TRUE(posenc::try_serialize_npy("<f4", {3}, v, 3, out).ok());
  EXPECT_EQ(out, posenc::serialize_npy("<f4", {3}, v, 3));

  struct bad_case {
    std::string dtype;
    std::vector<index_t> shape;
    const void* data;
    int version;
  };
  const std::vector<bad_case> bad{{"<c8", {3}, v, 0},
                                  {"<f4", {-3}, v, 0},
                                  {"<f4", {3}, nullptr, 0},
                                  {"<f4", {3}, v, 4},
                                  {"<f4", std::vector<index_t>(65, 1), v, 0},
                                  {"<f8", {index_t{1} << 40, index_t{1} << 40}, v, 0}};
  const std::string p = scratch_path("try_write.npy");
  posenc::write_npy(p, "<f4", {3}, v);
  const bytes_t first = read_bytes(p);
  for (const bad_case& b : bad) {
    out = marker;
    const std::string msg = thrown_message([&] { posenc::serialize_npy(b.dtype, b.shape, b.data, b.version); });
    expect_status(posenc::try_serialize_npy(b.dtype, b.shape, b.data, b.version, out), posenc::errc::invalid_argument,
                  msg, "try_serialize_npy " + b.dtype);
    EXPECT_EQ(out, marker);
    // write_npy carries serialize_npy's message; nothing is written.
    EXPECT_EQ(thrown_message([&] { posenc::write_npy(p, b.dtype, b.shape, b.data, b.version); }), msg);
    expect_status(posenc::try_write_npy(p, b.dtype, b.shape, b.data, b.version), posenc::errc::invalid_argument, msg,
                  "try_write_npy " + b.dtype);
    EXPECT_EQ(read_bytes(p), first);
  }

  // Accepted: the same bytes as write_npy.
  const float w[2] = {7, 8};
  EXPECT_TRUE(posenc::try_write_npy(p, "<f4", {2}, w).ok());
  EXPECT_EQ(read_bytes(p), posenc::serialize_npy("<f4", {2}, w));
  const std::string q = scratch_path("try_write_q.npy");
  posenc::write_npy(q, "<f4", {2}, w);
  EXPECT_EQ(read_bytes(q), read_bytes(p));
  std::remove(q.c_str());

  // A directory that does not exist: io_error (cannot create), nothing created.
  const std::string missing = scratch_path("try_no_such_dir/x.npy");
  expect_status(posenc::try_write_npy(missing, "<f4", {2}, w), posenc::errc::io_error,
                thrown_message([&] { posenc::write_npy(missing, "<f4", {2}, w); }), "try_write_npy missing dir");
  EXPECT_FALSE(file_exists(missing));
  // A non-empty directory in the way: io_error (cannot rename), the directory kept, no temporary left.
  const std::string dir = scratch_path("try_dir_in_the_way");
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::string inside = dir + "/keep";
  write_bytes(inside, {1});
  const std::string rename_msg = thrown_message([&] { posenc::write_npy(dir, "<f4", {2}, w); });
  EXPECT_NE(rename_msg.find("cannot rename"), std::string::npos) << rename_msg;
  expect_status(posenc::try_write_npy(dir, "<f4", {2}, w), posenc::errc::io_error, rename_msg, "try_write_npy rename");
  EXPECT_TRUE(file_exists(inside));
  std::remove(inside.c_str());
  ::rmdir(dir.c_str());

  // The tensor overload.
  tensor2f t(2, 2);
  t.setValues({{1, 2}, {3, 4}});
  EXPECT_TRUE(posenc::try_write_npy(p, t).ok());
  EXPECT_EQ(read_bytes(p), posenc::serialize_npy("<f4", {2, 2}, t.data()));
  const bytes_t second = read_bytes(p);
  expect_status(posenc::try_write_npy(p, t, 5), posenc::errc::invalid_argument,
                thrown_message([&] { posenc::write_npy(p, t, 5); }), "try_write_npy tensor version");
  expect_status(posenc::try_write_npy(missing, t), posenc::errc::io_error,
                thrown_message([&] { posenc::write_npy(missing, t); }), "try_write_npy tensor missing dir");
  EXPECT_EQ(read_bytes(p), second);
  std::remove(p.c_str());
}

TEST(NpyNoThrow, TensorConversionsMatchTheThrowingForms) {
  const double d[4] = {0.5, -1.25, 3, 1e300};
  const posenc::npy_array f8 = posenc::parse_npy(posenc::serialize_npy("<f8", {2, 2}, d).data(), 128 + 32);
  tensor2f t(1, 1);
  t(0, 0) = 42.0f;  // not setConstant: GCC 12 -Warray-bounds misreads Eigen's NEON packet store on one element
  EXPECT_TRUE(posenc::try_npy_to_tensor(f8, t).ok());
  const tensor2f want = posenc::npy_to_tensor<float, 2>(f8);
  ASSERT_EQ(t.dimension(0), 2);
  ASSERT_EQ(t.dimension(1), 2);
  for (index_t i = 0; i < 4; ++i) EXPECT_EQ(t.data()[i], want.data()[i]);
  EXPECT_TRUE(std::isinf(t(1, 1)));
  // Explicit template arguments, as the throwing form takes them.
  Eigen::Tensor<double, 2, Eigen::RowMajor> td;
  EXPECT_TRUE((posenc::try_npy_to_tensor<double, 2>(f8, td)).ok());
  EXPECT_EQ(td(0, 1), -1.25);

  const std::int64_t big[2] = {5, std::int64_t{1} << 40};
  const posenc::npy_array i8 = posenc::parse_npy(posenc::serialize_npy("<i8", {2}, big).data(), 128 + 16);
  posenc::npy_array short_data = f8;
  short_data.data.resize(8);
  tensor1i ti(1);
  ti(0) = -9;
  tensor2f tf(1, 1);
  tf(0, 0) = 42.0f;
  const auto ti_untouched = [&] { return ti.dimension(0) == 1 && ti(0) == -9; };
  const auto tf_untouched = [&] { return tf.dimension(0) == 1 && tf.dimension(1) == 1 && tf(0, 0) == 42.0f; };
  expect_status(posenc::try_npy_to_tensor(i8, ti), posenc::errc::invalid_argument,
                thrown_message([&] { (void)posenc::npy_to_tensor<std::int32_t, 1>(i8); }), "int32 range");
  EXPECT_TRUE(ti_untouched());
  expect_status(posenc::try_npy_to_tensor(f8, ti), posenc::errc::invalid_argument,
                thrown_message([&] { (void)posenc::npy_to_tensor<std::int32_t, 1>(f8); }), "rank");
  EXPECT_TRUE(ti_untouched());
  expect_status(posenc::try_npy_to_tensor(i8, tf), posenc::errc::invalid_argument,
                thrown_message([&] { (void)posenc::npy_to_tensor<float, 2>(i8); }), "rank 1 into rank 2");
  posenc::npy_array i8_2d = i8;
  i8_2d.shape = {1, 2};
  expect_status(posenc::try_npy_to_tensor(i8_2d, tf), posenc::errc::invalid_argument,
                thrown_message([&] { (void)posenc::npy_to_tensor<float, 2>(i8_2d); }), "integer into float");
  expect_status(posenc::try_npy_to_tensor(short_data, tf), posenc::errc::invalid_argument,
                thrown_message([&] { (void)posenc::npy_to_tensor<float, 2>(short_data); }), "data size");
  EXPECT_TRUE(tf_untouched());

  // read_npy_tensor: the file's problems are invalid_file (or io_error), with the throwing form's message.
  const std::string p = scratch_path("try_tensor.npy");
  posenc::write_npy(p, "<f8", {2, 2}, d);
  EXPECT_TRUE(posenc::try_read_npy_tensor(p, tf).ok());
  const tensor2f back = posenc::read_npy_tensor<float, 2>(p);
  for (index_t i = 0; i < 4; ++i) EXPECT_EQ(tf.data()[i], back.data()[i]);
  tf.resize(1, 1);
  tf(0, 0) = 42.0f;
  expect_status(posenc::try_read_npy_tensor(p, ti), posenc::errc::invalid_file,
                thrown_message([&] { (void)posenc::read_npy_tensor<std::int32_t, 1>(p); }), "read_npy_tensor rank");
  EXPECT_TRUE(ti_untouched());
  posenc::write_npy(p, "<i8", {2}, big);
  expect_status(posenc::try_read_npy_tensor(p, ti), posenc::errc::invalid_file,
                thrown_message([&] { (void)posenc::read_npy_tensor<std::int32_t, 1>(p); }), "read_npy_tensor range");
  EXPECT_TRUE(ti_untouched());
  write_bytes(p, craft(1, dict(">f4", "(2, 3)"), k_data24));
  expect_status(posenc::try_read_npy_tensor(p, tf), posenc::errc::invalid_file,
                thrown_message([&] { (void)posenc::read_npy_tensor<float, 2>(p); }), "read_npy_tensor big-endian");
  std::remove(p.c_str());
  expect_status(posenc::try_read_npy_tensor(p, tf), posenc::errc::io_error,
                thrown_message([&] { (void)posenc::read_npy_tensor<float, 2>(p); }), "read_npy_tensor missing");
  EXPECT_TRUE(tf_untouched());
}

TEST(NpyNoThrow, TableLoadSaveMatchTheThrowingForms) {
  fake_module a{{1, 2, 3, 4, 5, 6}};
  fake_module b{{0, 0, 0, 0, 0, 0}};
  const std::string p = scratch_path("try_table.npy");
  EXPECT_TRUE(posenc::try_save_npy_table(p, a).ok());
  const bytes_t saved = read_bytes(p);
  posenc::save_npy_table(p, a);
  EXPECT_EQ(read_bytes(p), saved);
  EXPECT_TRUE(posenc::try_load_npy_table(p, b).ok());
  EXPECT_EQ(b.t, a.t);

  const std::vector<float> before{9, 9, 9, 9, 9, 9};
  fake_module c{before};
  // Another shape, an integer dtype: invalid_file; a missing file: io_error. The table is unchanged.
  const float v6[6] = {1, 2, 3, 4, 5, 6};
  posenc::write_npy(p, "<f4", {3, 2}, v6);
  expect_status(posenc::try_load_npy_table(p, c), posenc::errc::invalid_file,
                thrown_message([&] { posenc::load_npy_table(p, c); }), "table shape");
  const std::int32_t i6[6] = {1, 2, 3, 4, 5, 6};
  posenc::write_npy(p, "<i4", {2, 3}, i6);
  expect_status(posenc::try_load_npy_table(p, c), posenc::errc::invalid_file,
                thrown_message([&] { posenc::load_npy_table(p, c); }), "table dtype");
  write_bytes(p, craft(1, dict("<f4", "(2, 3)", "True"), k_data24));
  expect_status(posenc::try_load_npy_table(p, c), posenc::errc::invalid_file,
                thrown_message([&] { posenc::load_npy_table(p, c); }), "table Fortran order");
  std::remove(p.c_str());
  expect_status(posenc::try_load_npy_table(p, c), posenc::errc::io_error,
                thrown_message([&] { posenc::load_npy_table(p, c); }), "table missing");
  EXPECT_EQ(c.t, before);

  // Saving: a bad version is invalid_argument, a missing directory io_error; nothing is written.
  const std::string missing = scratch_path("try_no_such_dir/t.npy");
  expect_status(posenc::try_save_npy_table(missing, a), posenc::errc::io_error,
                thrown_message([&] { posenc::save_npy_table(missing, a); }), "save missing dir");
  expect_status(posenc::try_save_npy_table(p, a, 9), posenc::errc::invalid_argument,
                thrown_message([&] { posenc::save_npy_table(p, a, 9); }), "save version");
  EXPECT_FALSE(file_exists(p));
  EXPECT_FALSE(file_exists(missing));

  // A learned module, as the throwing test above uses.
  posenc::learned_config cfg;
  cfg.max_positions = 4;
  cfg.dim = 3;
  posenc::learned_position_embedding<> m(cfg), n(cfg);
  m.init_normal(5);
  EXPECT_TRUE(posenc::try_save_npy_table(p, m).ok());
  EXPECT_TRUE(posenc::try_load_npy_table(p, n).ok());
  for (index_t i = 0; i < m.table().size(); ++i) EXPECT_EQ(m.table().data()[i], n.table().data()[i]);
  std::remove(p.c_str());
}

}  // namespace
