// What a rejection says: the checks on error messages that every test file shares.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>

#include <gtest/gtest.h>
#include <posenc/error.hpp>

namespace posenc_test {

/// The message of the posenc::argument_error `f` throws; a test failure if it throws none.
template <class F>
std::string thrown_message(F&& f) {
  try {
    f();
  } catch (const posenc::argument_error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no posenc::argument_error";
  return "(no exception)";
}

/// Every part must occur in `msg` (a rejection's message names what it rejected).
inline void expect_contains(std::string_view msg, std::initializer_list<std::string_view> parts) {
  for (std::string_view p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "\"" << p << "\" not in: " << msg;
}

}  // namespace posenc_test
