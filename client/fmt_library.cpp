// fmt's compiled part, built once for ralphctl. Debian ships libfmt only as a shared library,
// and ralphctl loads none (its start-up time, bench/README.md); fmt's header-only mode would
// compile all of this into every file that formats: 12 of the 24 s a command's file took to
// compile. So the client uses fmt's headers as a program linking libfmt would, and this file is
// that library: the functions of fmt/format-inl.h, and the templates fmt/format.h declares as
// instantiated in the library.
#include <fmt/format.h>

#include <fmt/format-inl.h>

namespace fmt {
inline namespace v9 {
namespace detail {

template auto thousands_sep_impl<char>(locale_ref) -> thousands_sep_result<char>;
template auto decimal_point_impl<char>(locale_ref) -> char;

}  // namespace detail
}  // namespace v9
}  // namespace fmt
