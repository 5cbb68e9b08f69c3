# tempered_module(<name> [DEPS <module>...] [LIBRARIES <target>...])
#
# The static library tempered_<name>, built from every .cpp under src/<name>/. Its include root is a
# generated folder that holds a single entry, a link <name> -> src/<name>, exported PUBLIC: a file sees
# "<name>/..." headers of its own folder and of the folders its DEPS lead to (transitively), and nothing
# else, so `#include "server/..."` from models/ is "file not found" rather than a habit to avoid.
# Files named *_avx2.cpp / *_avx512.cpp are compiled for that ISA only; the runtime dispatcher
# (src/kernels/cpu/dispatch.cpp) decides whether they are ever called.
function(tempered_module name)
  cmake_parse_arguments(PARSE_ARGV 1 module "" "" "DEPS;LIBRARIES")
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${TEMPERED_SOURCE_ROOT}/${name}/*.cpp)
  list(FILTER sources EXCLUDE REGEX "/src/cli/main\\.cpp$")
  foreach(source ${sources})
    if(source MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    elseif(source MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${source} PROPERTIES COMPILE_OPTIONS
        "-mavx2;-mfma;-mf16c;-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512vnni;-mavx512bf16")
    endif()
  endforeach()

  set(include_root ${TEMPERED_MODULE_ROOTS}/${name})
  file(MAKE_DIRECTORY ${include_root})
  file(CREATE_LINK ${TEMPERED_SOURCE_ROOT}/${name} ${include_root}/${name} SYMBOLIC)

  add_library(tempered_${name} STATIC ${sources})
  target_include_directories(tempered_${name} PUBLIC ${include_root})
  list(TRANSFORM module_DEPS PREPEND tempered_)
  target_link_libraries(tempered_${name} PUBLIC ${module_DEPS} ${module_LIBRARIES})
  set_property(GLOBAL APPEND PROPERTY TEMPERED_MODULES tempered_${name})
endfunction()
