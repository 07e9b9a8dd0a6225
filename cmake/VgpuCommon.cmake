# Shared build settings: warnings, sanitizers, CUDA headers, version info.

set(VGPU_SANITIZERS "" CACHE STRING "Comma list of sanitizers for project code (address,undefined | thread)")

# Warnings for every target of the project; applies to all directories.
add_compile_options(-Wall -Wextra -Werror)

# Only the CUDA headers are needed at build time (cuda.h); no CUDA library is linked.
find_path(VGPU_CUDA_INCLUDE_DIR cuda.h
  HINTS ENV CUDA_HOME /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include
  PATH_SUFFIXES include
  REQUIRED)
file(STRINGS ${VGPU_CUDA_INCLUDE_DIR}/cuda.h _cuda_version_line REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX REPLACE "^#define CUDA_VERSION ([0-9]+).*" "\\1" VGPU_CUDA_HEADERS_VERSION "${_cuda_version_line}")
add_library(vgpu_cuda_headers INTERFACE)
target_include_directories(vgpu_cuda_headers SYSTEM INTERFACE ${VGPU_CUDA_INCLUDE_DIR})

# The environment contract's names (libvgpu/include/vgpu/env_contract.h): one home for every
# variable name, used by the library, the device plugin's Allocate, the webhook and `vgpu run`.
add_library(vgpu_env_contract INTERFACE)
target_include_directories(vgpu_env_contract INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/libvgpu/include)

macro(vgpu_apply_sanitizers)
  if(VGPU_SANITIZERS)
    add_compile_options(-fsanitize=${VGPU_SANITIZERS} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${VGPU_SANITIZERS})
  endif()
endmacro()

# Git commit of the source tree at configure time (best effort: "unknown" outside a checkout).
execute_process(COMMAND git -C ${CMAKE_SOURCE_DIR} rev-parse --short=12 HEAD
  OUTPUT_VARIABLE VGPU_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _git_rc)
if(NOT _git_rc EQUAL 0 OR VGPU_GIT_COMMIT STREQUAL "")
  set(VGPU_GIT_COMMIT "unknown")
endif()

# True when component folder `name` (e.g. "kube", "testing/fakes") is selected by VGPU_COMPONENTS.
function(vgpu_component_enabled name out)
  if(NOT VGPU_COMPONENTS OR name STREQUAL "tests" OR name IN_LIST VGPU_COMPONENTS)
    set(${out} TRUE PARENT_SCOPE)
  else()
    get_filename_component(_leaf ${name} NAME)
    if(_leaf IN_LIST VGPU_COMPONENTS)
      set(${out} TRUE PARENT_SCOPE)
    else()
      set(${out} FALSE PARENT_SCOPE)
    endif()
  endif()
endfunction()

macro(vgpu_add_component dir)
  vgpu_component_enabled(${dir} _enabled)
  if(_enabled AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${dir}/CMakeLists.txt)
    add_subdirectory(${dir})
  endif()
endmacro()

# Adds every immediate subfolder of the current folder that has a CMakeLists.txt,
# filtered by VGPU_COMPONENTS on the subfolder name (tests/<name>, core/<name>, sim/<name>).
macro(vgpu_add_subfolders)
  file(GLOB _subs LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _subs)
  foreach(_sub ${_subs})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_sub})
      vgpu_add_component(${_sub})
    endif()
  endforeach()
endmacro()
