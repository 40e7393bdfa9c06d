// posenc: transformer positional encodings. SPDX-License-Identifier: Apache-2.0
//
// One spelling table per public enum, beside the enum (an `enum_names<E>` specialisation in the enum's own
// header), and the two functions every surface uses on it: to_string and parse. The CLI, the Python module and
// the examples spell values through these, so a value has one name everywhere; parse accepts '-' for '_' and
// any letter case ("half-split", "HALF_SPLIT", "half_split"), so the CLI's spelling and Python's both work.
#pragma once

#include <cstddef>
#include <type_traits>
#include <utility>

#include "posenc/config.hpp"

POSENC_BEGIN_NAMESPACE

/// One spelling of an enum value. The first entry of a value in its table is its canonical name (to_string);
/// later entries are accepted aliases (e.g. Hugging Face's "dynamic" for rope_scaling_type::dynamic_ntk).
template <class E>
struct enum_name {
  E value;           ///< the enum value
  const char* name;  ///< one of its spellings
};

/// Specialised beside each public enum with `static constexpr enum_name<E> list[]`.
template <class E>
struct enum_names;

namespace detail {

template <class E, class = void>
struct has_enum_names : std::false_type {};
template <class E>
struct has_enum_names<E, std::void_t<decltype(enum_names<E>::list)>> : std::true_type {};
template <class E>
using if_named = std::enable_if_t<has_enum_names<E>::value, int>;

constexpr char fold_name_char(char c) noexcept {
  return c == '-' ? '_' : (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

constexpr bool same_name(const char* a, std::size_t n, const char* b) noexcept {
  std::size_t i = 0;
  for (; i < n; ++i)
    if (b[i] == '\0' || fold_name_char(a[i]) != fold_name_char(b[i])) return false;
  return b[i] == '\0';
}

constexpr std::size_t name_length(const char* s) noexcept {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

/// A short list of names in a fixed buffer (no <string>: the core headers stay light).
struct name_list {
  char text[512] = {};
  constexpr const char* c_str() const noexcept { return text; }
};

}  // namespace detail

/// The canonical name of `e` ("half_split", "dynamic_ntk", "NLHD", ...); "?" for a value outside the enum.
template <class E, detail::if_named<E> = 0>
constexpr const char* to_string(E e) noexcept {
  for (const auto& n : enum_names<E>::list)
    if (n.value == e) return n.name;
  return "?";
}

/// The value named by the `n` characters at `s` into `out` (true), or false leaving `out` unchanged.
/// Case-insensitive, '-' = '_'.
template <class E, detail::if_named<E> = 0>
constexpr bool parse(const char* s, std::size_t n, E& out) noexcept {
  for (const auto& name : enum_names<E>::list)
    if (detail::same_name(s, n, name.name)) {
      out = name.value;
      return true;
    }
  return false;
}

/// parse of a NUL-terminated name.
template <class E, detail::if_named<E> = 0>
constexpr bool parse(const char* s, E& out) noexcept {
  return parse(s, detail::name_length(s), out);
}

/// parse of a std::string or std::string_view (anything with data() and size()).
template <class S, class E, detail::if_named<E> = 0,
          class = decltype(std::declval<const S&>().data() + std::declval<const S&>().size())>
constexpr bool parse(const S& s, E& out) noexcept {
  return parse(s.data(), static_cast<std::size_t>(s.size()), out);
}

/// Every accepted name of E, canonical names first, as "a, b, c" (`.c_str()`) for messages and help texts.
template <class E, detail::if_named<E> = 0>
constexpr detail::name_list enum_choices(const char* sep = ", ") noexcept {
  detail::name_list r;
  std::size_t at = 0;
  const auto put = [&](const char* t) {
    for (std::size_t i = 0; t[i] != '\0' && at + 1 < sizeof r.text; ++i) r.text[at++] = t[i];
  };
  bool first = true;
  for (const auto& name : enum_names<E>::list) {
    if (!first) put(sep);
    put(name.name);
    first = false;
  }
  return r;
}

POSENC_END_NAMESPACE
