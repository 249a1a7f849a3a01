// The shared libbaton_checkpoint's own entry: which build a program loaded (for dlopen and
// ctypes users, who cannot see C++ symbols).
#include "common/version.h"

extern "C" const char* baton_checkpoint_version() { return baton::Version(); }
