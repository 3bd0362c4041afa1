# Embedded CPython for .py candidates (src/python/): the headers and shared libpython of
# PKB_PYTHON_EXE, the interpreter whose torch pkb links, and that torch's
# libtorch_python.so. Optional: without them pkb builds, and a .py candidate gets a
# compile_error that says why.
execute_process(
  COMMAND ${PKB_PYTHON_EXE} -c "import sysconfig as s, os; v = s.get_config_var; print(s.get_paths()['include']); print(os.path.join(v('LIBDIR') or '', v('INSTSONAME') or ''))"
  OUTPUT_VARIABLE _py OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
set(PKB_PYTHON_EMBED OFF)
if(_rc EQUAL 0)
  string(REPLACE "\n" ";" _py "${_py}")
  list(GET _py 0 PKB_PYTHON_INCLUDE)
  list(GET _py 1 PKB_LIBPYTHON)
  if(NOT EXISTS ${PKB_PYTHON_INCLUDE}/Python.h)
    set(_why "no Python.h in ${PKB_PYTHON_INCLUDE} (install the interpreter's development files, e.g. python3-dev)")
  elseif(NOT PKB_LIBPYTHON MATCHES "\\.so" OR NOT EXISTS ${PKB_LIBPYTHON})
    set(_why "no shared libpython for ${PKB_PYTHON_EXE} ('${PKB_LIBPYTHON}'; a static-only build cannot be embedded)")
  elseif(NOT EXISTS ${PKB_TORCH_ROOT}/lib/libtorch_python.so)
    set(_why "no libtorch_python.so under ${PKB_TORCH_ROOT}/lib")
  else()
    set(PKB_PYTHON_EMBED ON)
  endif()
else()
  set(_why "${PKB_PYTHON_EXE} did not answer")
endif()
if(PKB_PYTHON_EMBED)
  message(STATUS "pkb: .py candidates run in embedded Python (${PKB_LIBPYTHON})")
else()
  message(STATUS "pkb: .py candidates disabled: ${_why}")
endif()
