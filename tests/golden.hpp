// Reader for the golden data files in tests/golden/ (format: tests/golden/FORMAT.md).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <locale>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef POSENC_GOLDEN_DIR
#define POSENC_GOLDEN_DIR "tests/golden"  // the build normally defines this as an absolute path
#endif

namespace posenc_test {

struct golden_array {
  std::string dtype;                 // "f64" or "i64"
  std::vector<std::int64_t> shape;
  std::vector<double> values;        // every element as double (i64 arrays too)
  std::vector<std::int64_t> ivalues; // i64 arrays only
  std::size_t size() const {
    std::size_t n = 1;
    for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
    return n;
  }
};

namespace detail {

inline bool parse_double(const std::string& tok, double& out) {
  std::istringstream is(tok);
  is.imbue(std::locale::classic());
  is >> out;
  return !is.fail() && is.peek() == std::char_traits<char>::eof();
}

inline bool parse_int(const std::string& tok, std::int64_t& out) {
  std::istringstream is(tok);
  is.imbue(std::locale::classic());
  long long v = 0;
  is >> v;
  if (is.fail() || is.peek() != std::char_traits<char>::eof()) return false;
  out = static_cast<std::int64_t>(v);
  return true;
}

}  // namespace detail

struct golden_case {
  std::string file;
  std::string name;
  std::map<std::string, std::string> params;
  std::map<std::string, golden_array> arrays;

  bool has(const std::string& key) const { return params.count(key) != 0 || arrays.count(key) != 0; }

  const std::string& str(const std::string& key) const {
    auto it = params.find(key);
    if (it == params.end()) fail("missing param '" + key + "'");
    return it->second;
  }
  double num(const std::string& key) const {
    double v = 0;
    if (!detail::parse_double(str(key), v)) fail("param '" + key + "' is not a number: " + str(key));
    return v;
  }
  std::int64_t integer(const std::string& key) const {
    std::int64_t v = 0;
    if (!detail::parse_int(str(key), v)) fail("param '" + key + "' is not an integer: " + str(key));
    return v;
  }
  const golden_array& array(const std::string& key) const {
    auto it = arrays.find(key);
    if (it == arrays.end()) fail("missing array '" + key + "'");
    return it->second;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("golden " + file + ", case " + name + ": " + what);
  }
};

/// The names of the cases of `<dir>/<file>` (those with an array named `with_array`, if given), read from the
/// `case` and `array` lines only. Test registration runs in every CTest process (one per test), so it must not
/// parse the values: load_golden of the RoPE files alone took ~0.3 s per process under the sanitizers.
inline std::vector<std::string> golden_case_names(const std::string& file, const char* with_array = nullptr,
                                                  const std::string& dir = POSENC_GOLDEN_DIR) {
  const std::string path = dir + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("golden: cannot open " + path);
  std::vector<std::string> names;
  std::string line, current;
  bool has = with_array == nullptr;
  const std::string want = with_array ? std::string("array ") + with_array + " " : std::string();
  while (std::getline(in, line)) {
    if (line.compare(0, 5, "case ") == 0) {
      current = line.substr(5, line.find_first_of(" \t#", 5) - 5);
      has = with_array == nullptr;
    } else if (!has && line.compare(0, want.size(), want) == 0) {
      has = true;
    } else if (line.compare(0, 3, "end") == 0 && (line.size() == 3 || line[3] == ' ' || line[3] == '#')) {
      if (has && !current.empty()) names.push_back(current);
      current.clear();
    }
  }
  return names;
}

// Reads `<dir>/<file>`.
inline std::vector<golden_case> load_golden(const std::string& file, const std::string& dir = POSENC_GOLDEN_DIR) {
  const std::string path = dir + "/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("golden: cannot open " + path);

  std::vector<golden_case> cases;
  golden_case* cur = nullptr;
  golden_array* arr = nullptr;  // array still reading values
  std::string arr_key;
  std::size_t lineno = 0;
  auto fail = [&](const std::string& what) -> void {
    throw std::runtime_error("golden " + path + ":" + std::to_string(lineno) + ": " + what);
  };
  auto new_key = [&](const std::string& key) {
    if (cur->has(key)) fail("duplicate key '" + key + "' in case " + cur->name);
  };

  std::string line;
  while (std::getline(in, line)) {
    ++lineno;
    line = line.substr(0, line.find('#'));
    std::istringstream ls(line);
    std::vector<std::string> tok;
    for (std::string t; ls >> t;) tok.push_back(t);
    if (tok.empty()) continue;

    if (arr) {  // values of the current array
      for (const std::string& t : tok) {
        if (arr->values.size() == arr->size()) fail("too many values for array '" + arr_key + "'");
        if (t == "case" || t == "param" || t == "array" || t == "end")
          fail("array '" + arr_key + "' has " + std::to_string(arr->values.size()) + " of " +
               std::to_string(arr->size()) + " values");
        if (arr->dtype == "i64") {
          std::int64_t v = 0;
          if (!detail::parse_int(t, v)) fail("bad i64 value '" + t + "'");
          arr->ivalues.push_back(v);
          arr->values.push_back(static_cast<double>(v));
        } else {
          double v = 0;
          if (!detail::parse_double(t, v)) fail("bad f64 value '" + t + "'");
          arr->values.push_back(v);
        }
      }
      if (arr->values.size() == arr->size()) arr = nullptr;
      continue;
    }

    const std::string& kw = tok[0];
    if (kw == "case") {
      if (cur) fail("'case' before 'end' of case " + cur->name);
      if (tok.size() != 2) fail("expected: case <name>");
      for (const golden_case& c : cases)
        if (c.name == tok[1]) fail("duplicate case " + tok[1]);
      cases.emplace_back();
      cur = &cases.back();
      cur->file = file;
      cur->name = tok[1];
    } else if (!cur) {
      fail("'" + kw + "' outside a case");
    } else if (kw == "end") {
      if (tok.size() != 1) fail("expected: end");
      cur = nullptr;
    } else if (kw == "param") {
      if (tok.size() != 3) fail("expected: param <key> <value>");
      new_key(tok[1]);
      cur->params[tok[1]] = tok[2];
    } else if (kw == "array") {
      std::int64_t rank = 0;
      if (tok.size() < 4 || !detail::parse_int(tok[3], rank) || rank < 0 ||
          tok.size() != 4 + static_cast<std::size_t>(rank))
        fail("expected: array <key> <f64|i64> <rank> <dims...>");
      if (tok[2] != "f64" && tok[2] != "i64") fail("unknown dtype '" + tok[2] + "'");
      new_key(tok[1]);
      golden_array a;
      a.dtype = tok[2];
      for (std::size_t i = 4; i < tok.size(); ++i) {
        std::int64_t d = 0;
        if (!detail::parse_int(tok[i], d) || d < 0) fail("bad dimension '" + tok[i] + "'");
        a.shape.push_back(d);
      }
      a.values.reserve(a.size());
      arr_key = tok[1];
      arr = &(cur->arrays[tok[1]] = std::move(a));
      if (arr->size() == 0) arr = nullptr;
    } else {
      fail("unknown keyword '" + kw + "'");
    }
  }
  if (arr) fail("end of file inside array values");
  if (cur) fail("end of file inside case " + cur->name);
  return cases;
}

inline const golden_case& find_case(const std::vector<golden_case>& cases, const std::string& name) {
  for (const golden_case& c : cases)
    if (c.name == name) return c;
  throw std::runtime_error("golden " + (cases.empty() ? std::string("(empty)") : cases.front().file) +
                           ": no case '" + name + "'");
}

}  // namespace posenc_test
