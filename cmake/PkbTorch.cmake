# Locates libtorch: from Torch_DIR when the user gives one, else from the torch wheel of
# PKB_PYTHON (default: the repo's .venv, then python3). Defines pkb::torch (CPU parts)
# and, where the wheel is a CUDA build, pkb::torch_cuda. TorchConfig.cmake is not used:
# it insists on a CUDA toolkit that matches the wheel, and the CPU device must build
# without one.
if(NOT PKB_PYTHON)
  if(EXISTS ${CMAKE_SOURCE_DIR}/.venv/bin/python3)
    set(PKB_PYTHON_EXE ${CMAKE_SOURCE_DIR}/.venv/bin/python3)
  else()
    find_program(PKB_PYTHON_EXE python3 REQUIRED)
  endif()
else()
  set(PKB_PYTHON_EXE ${PKB_PYTHON})
endif()

if(Torch_DIR)
  get_filename_component(PKB_TORCH_ROOT "${Torch_DIR}/../../.." ABSOLUTE)
else()
  # The torch package's folder, found without importing torch (which takes seconds).
  execute_process(
    COMMAND ${PKB_PYTHON_EXE} -c "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])"
    OUTPUT_VARIABLE PKB_TORCH_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "pkb: ${PKB_PYTHON_EXE} has no torch. Run scripts/install-deps.sh, "
                        "or pass -DPKB_PYTHON=/path/to/python3 or -DTorch_DIR=<libtorch>/share/cmake/Torch")
  endif()
endif()
if(NOT EXISTS ${PKB_TORCH_ROOT}/lib/libtorch_cpu.so)
  message(FATAL_ERROR "pkb: no libtorch_cpu.so under ${PKB_TORCH_ROOT}/lib")
endif()
set(PKB_TORCH_VERSION "unknown")
if(EXISTS ${PKB_TORCH_ROOT}/version.py)
  file(STRINGS ${PKB_TORCH_ROOT}/version.py _tv REGEX "^__version__")
  string(REGEX REPLACE ".*['\"]([^'\"]+)['\"].*" "\\1" PKB_TORCH_VERSION "${_tv}")
endif()
message(STATUS "pkb: libtorch ${PKB_TORCH_VERSION} at ${PKB_TORCH_ROOT}")
# src/comm/gloo_comm.cpp declares ProcessGroupGloo as torch 2.11 lays it out (the wheel
# ships no gloo headers); another torch may lay it out differently.
if(NOT PKB_TORCH_VERSION MATCHES "^2\\.11\\.")
  message(WARNING "pkb: built against torch ${PKB_TORCH_VERSION}, not 2.11: check the ProcessGroupGloo "
                  "declarations in src/comm/gloo_comm.cpp against this torch's ProcessGroupGloo.hpp")
endif()

add_library(pkb::torch INTERFACE IMPORTED)
set_target_properties(pkb::torch PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${PKB_TORCH_ROOT}/include;${PKB_TORCH_ROOT}/include/torch/csrc/api/include"
  INTERFACE_LINK_LIBRARIES "${PKB_TORCH_ROOT}/lib/libtorch_cpu.so;${PKB_TORCH_ROOT}/lib/libc10.so"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1")

set(PKB_TORCH_HAS_CUDA OFF)
if(EXISTS ${PKB_TORCH_ROOT}/lib/libtorch_cuda.so)
  set(PKB_TORCH_HAS_CUDA ON)
  add_library(pkb::torch_cuda INTERFACE IMPORTED)
  set_target_properties(pkb::torch_cuda PROPERTIES
    INTERFACE_LINK_LIBRARIES "${PKB_TORCH_ROOT}/lib/libtorch_cuda.so;${PKB_TORCH_ROOT}/lib/libc10_cuda.so;pkb::torch")
endif()

# The wheel's CUDA libraries (cudart, NCCL, cuBLAS) sit beside torch under nvidia/.
get_filename_component(PKB_SITE_PACKAGES "${PKB_TORCH_ROOT}/.." ABSOLUTE)
set(PKB_RUNTIME_RPATH "${PKB_TORCH_ROOT}/lib")
foreach(_d nvidia/cu13/lib nvidia/nccl/lib nvidia/cudnn/lib nvidia/cusparselt/lib nvidia/nvshmem/lib)
  if(EXISTS ${PKB_SITE_PACKAGES}/${_d})
    list(APPEND PKB_RUNTIME_RPATH ${PKB_SITE_PACKAGES}/${_d})
  endif()
endforeach()
