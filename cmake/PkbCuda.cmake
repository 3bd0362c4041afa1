# The CUDA device: needs nvcc, the CUDA runtime and NCCL, and a CUDA build of torch.
# Without them pkb builds with the CPU device only and says so.
set(PKB_CUDA OFF)
if(PKB_WITH_CUDA)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER AND PKB_TORCH_HAS_CUDA)
    if(NOT CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80-real 90-real 90-virtual)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # NCCL: the wheel's own (the one libtorch_cuda loads), else the toolkit's or the system's.
    find_path(PKB_NCCL_INCLUDE nccl.h
      HINTS ${PKB_SITE_PACKAGES}/nvidia/nccl/include ${CUDAToolkit_INCLUDE_DIRS})
    find_library(PKB_NCCL_LIB NAMES nccl libnccl.so.2
      HINTS ${PKB_SITE_PACKAGES}/nvidia/nccl/lib ${CUDAToolkit_LIBRARY_DIR})
    if(PKB_NCCL_INCLUDE AND PKB_NCCL_LIB)
      set(PKB_CUDA ON)
      add_library(pkb::nccl INTERFACE IMPORTED)
      set_target_properties(pkb::nccl PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES ${PKB_NCCL_INCLUDE}
        INTERFACE_LINK_LIBRARIES ${PKB_NCCL_LIB})
    else()
      message(WARNING "pkb: NCCL not found: building without the CUDA device")
    endif()
  elseif(NOT CMAKE_CUDA_COMPILER)
    message(WARNING "pkb: no CUDA toolkit (nvcc) found: building without the CUDA device (CPU device only)")
  else()
    message(WARNING "pkb: torch at ${PKB_TORCH_ROOT} is a CPU build: building without the CUDA device")
  endif()
endif()
message(STATUS "pkb: CUDA device ${PKB_CUDA}")
