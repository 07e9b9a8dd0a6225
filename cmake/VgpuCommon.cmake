# Shared build settings: warnings, sanitizers, CUDA headers, version info.

set(VGPU_SANITIZERS "" CACHE STRING "Comma list of sanitizers for project code (address,undefined | thread)")

# Warnings for every target of the project; applies to all directories.
add_compile_options(-Wall -Wextra -Werror)

# libFuzzer targets (fuzz/, docs/reliability.md): clang only. Every target of the build gets
# libFuzzer's coverage instrumentation (-fsanitize=fuzzer-no-link); the fuzz executables link the
# fuzzer's main. Combine with VGPU_SANITIZERS=address,undefined; tests/fuzz/fuzz_smoke.sh
# configures such a build of just the fuzz targets.
option(VGPU_FUZZ "Build the libFuzzer targets in fuzz/ (clang only)" OFF)
if(VGPU_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "VGPU_FUZZ=ON needs clang (libFuzzer): configure with "
      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# Only the CUDA headers are needed at build time (cuda.h); no CUDA library is linked.
find_path(VGPU_CUDA_INCLUDE_DIR cuda.h
  HINTS ENV CUDA_HOME /usr/local/cuda/include /usr/local/cuda/targets/x86_64-linux/include
  PATH_SUFFIXES include
  REQUIRED)
file(STRINGS ${VGPU_CUDA_INCLUDE_DIR}/cuda.h _cuda_version_line REGEX "^#define CUDA_VERSION [0-9]+")
string(REGEX REPLACE "^#define CUDA_VERSION ([0-9]+).*" "\\1" VGPU_CUDA_HEADERS_VERSION "${_cuda_version_line}")
add_library(vgpu_cuda_headers INTERFACE)
target_include_directories(vgpu_cuda_headers SYSTEM INTERFACE ${VGPU_CUDA_INCLUDE_DIR})

# HAMi's environment contract (libvgpu/include/vgpu/env_contract.h): variable names and default
# paths shared by libvgpu.so, the device plugin's Allocate, the webhook and `vgpu run`. Defined
# here, not in libvgpu/, so that components configured without libvgpu can use it.
add_library(vgpu_env_contract INTERFACE)
target_include_directories(vgpu_env_contract INTERFACE ${PROJECT_SOURCE_DIR}/libvgpu/include)

# Sanitizers, per target. Every compiled target of the project links vgpu_sanitizers
# (vgpu_sanitize_host_targets, called once at the end of the top-level CMakeLists.txt) except
# code loaded into or run as foreign processes: the components in VGPU_FOREIGN_COMPONENTS
# (libvgpu.so, the fake driver) and targets marked with vgpu_foreign_target() (programs run with
# libvgpu.so preloaded). A sanitizer runtime must be the first library of a process, which an
# LD_PRELOAD'ed or dlopen'ed library cannot guarantee.
add_library(vgpu_sanitizers INTERFACE)
if(VGPU_SANITIZERS)
  target_compile_options(vgpu_sanitizers INTERFACE
    -fsanitize=${VGPU_SANITIZERS} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(vgpu_sanitizers INTERFACE -fsanitize=${VGPU_SANITIZERS})
endif()

# Marks targets that must never be sanitized (see vgpu_sanitizers).
function(vgpu_foreign_target)
  set_target_properties(${ARGN} PROPERTIES VGPU_FOREIGN TRUE)
endfunction()

# Every target defined in folder `dir` and its subfolders, into `out`.
function(_vgpu_targets_under dir out)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_sub IN LISTS _subdirs)
    _vgpu_targets_under(${_sub} _sub_targets)
    list(APPEND _targets ${_sub_targets})
  endforeach()
  set(${out} ${_targets} PARENT_SCOPE)
endfunction()

# Links vgpu_sanitizers into every compiled target of the project (libraries, executables, tests,
# benchmarks) but those of VGPU_FOREIGN_COMPONENTS and those marked vgpu_foreign_target().
function(vgpu_sanitize_host_targets)
  set(_foreign_dirs "")
  foreach(_dir IN LISTS VGPU_FOREIGN_COMPONENTS)
    list(APPEND _foreign_dirs ${PROJECT_SOURCE_DIR}/${_dir})
  endforeach()
  _vgpu_targets_under(${PROJECT_SOURCE_DIR} _targets)
  foreach(_t IN LISTS _targets)
    get_target_property(_type ${_t} TYPE)
    if(NOT _type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY)$")
      continue()
    endif()
    get_target_property(_foreign ${_t} VGPU_FOREIGN)
    get_target_property(_src ${_t} SOURCE_DIR)
    foreach(_dir IN LISTS _foreign_dirs)
      string(FIND "${_src}/" "${_dir}/" _pos)
      if(_pos EQUAL 0)
        set(_foreign TRUE)
      endif()
    endforeach()
    if(NOT _foreign)
      target_link_libraries(${_t} PRIVATE vgpu_sanitizers)
    endif()
  endforeach()
endfunction()

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
