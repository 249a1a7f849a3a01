// The build's version: the project version and `git describe` of the tree at configure
// time ("0.1.0+g5db414c", "-dirty" when it had uncommitted changes), for --version and
// the baton_build_info metric.
#pragma once

namespace baton {

const char* Version();

}  // namespace baton
