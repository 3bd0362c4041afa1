// The interface of libpkb_python.so (src/python/), the layer that runs .py candidates in an
// embedded CPython. eval/candidate.cpp loads it only when a .py candidate runs, so the pkb
// binary itself never needs libpython.
#pragma once

#include <string>

#include "eval/candidate.hpp"

extern "C" {
// Before the sandbox: starts the interpreter, imports torch (and Triton when `cuda`), and
// adds what the sandbox must grant to `needs`. False with `error` set when it cannot.
typedef bool (*pkb_python_prepare_fn)(bool cuda, pkb::eval::LoadNeeds* needs, std::string* error);
// Inside the sandbox: imports the candidate module at `path`. Null with `error` set (the
// traceback included) when the import fails or pkb_run is missing.
typedef pkb::eval::Candidate* (*pkb_python_load_fn)(const char* path, std::string* error);
}
