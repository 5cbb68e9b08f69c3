# tempered_unity(<target>)
#
# With TEMPERED_UNITY_BATCH=N (scripts/build.sh), a target's sources (a library's, or the unit tests') are
# compiled N to a translation unit: the heavy headers (nlohmann/json, httplib, gtest, the standard library)
# are parsed, and their templates instantiated and optimised, once per batch instead of once per file
# (bench/results/ci-time-2026-12-03.md).
# Developer builds leave it off: a file then compiles alone, so a missing #include still shows, and an edit
# recompiles one file, not its batch. Unlike CMAKE_UNITY_BUILD's, a batch names its sources by paths
# relative to its own folder, so in a clone at another path ccache (CCACHE_BASEDIR, scripts/build.sh)
# still hits in direct mode, without running the preprocessor. Sources with compile options or
# definitions of their own (the *_avx2 / *_avx512 kernels, toolcalls/arguments_validator.cpp,
# tests/unit/source_dir.cpp) and generated ones (the web UI) stay on their own, as do those with
# SKIP_UNITY_BUILD_INCLUSION set. Two files of a batch share one translation unit: their
# anonymous-namespace names must differ (a unit test file nests its own in a namespace named after it).
#
# tempered_unity(<target> FOLDERS_UNDER <root>) batches each folder under <root> (src/api, src/chat with
# its subfolders...) apart, so a target made of several modules' sources (the fuzz build's) gets the
# batches those modules' own libraries have, whose names are known not to collide.
function(tempered_unity target)
  cmake_parse_arguments(PARSE_ARGV 1 unity "" "FOLDERS_UNDER" "")
  if(NOT TEMPERED_UNITY_BATCH OR NOT TARGET ${target})
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  get_target_property(source_dir ${target} SOURCE_DIR)
  set(unity_dir ${CMAKE_BINARY_DIR}/unity/${target})
  set(alone "")
  set(batched "")
  foreach(source ${sources})
    get_filename_component(path ${source} ABSOLUTE BASE_DIR ${source_dir})
    set(own_settings "")
    foreach(property COMPILE_OPTIONS COMPILE_DEFINITIONS GENERATED SKIP_UNITY_BUILD_INCLUSION)
      get_source_file_property(value ${path} TARGET_DIRECTORY ${target} ${property})
      if(value)
        set(own_settings ${property})
      endif()
    endforeach()
    if(own_settings OR NOT path MATCHES "\\.cpp$")
      list(APPEND alone ${path})
    else()
      list(APPEND batched ${path})
    endif()
  endforeach()

  list(SORT batched)
  set(unity_sources "")
  set(batch 0)
  set(content "")
  set(in_batch 0)
  set(batch_folder "")
  foreach(path ${batched})
    set(folder "")
    if(unity_FOLDERS_UNDER)
      file(RELATIVE_PATH folder ${unity_FOLDERS_UNDER} ${path})
      string(REGEX REPLACE "/.*" "" folder ${folder})
    endif()
    if(in_batch EQUAL TEMPERED_UNITY_BATCH OR (in_batch AND NOT folder STREQUAL batch_folder))
      tempered_unity_write_batch()
    endif()
    set(batch_folder "${folder}")
    file(RELATIVE_PATH relative ${unity_dir} ${path})
    string(APPEND content "#include \"${relative}\"\n")
    math(EXPR in_batch "${in_batch} + 1")
  endforeach()
  if(in_batch)
    tempered_unity_write_batch()
  endif()
  set_property(TARGET ${target} PROPERTY SOURCES ${alone} ${unity_sources})
endfunction()

# Writes the batch being gathered in tempered_unity (content) and starts the next: a macro, so it works
# on the caller's variables.
macro(tempered_unity_write_batch)
  # CONFIGURE rewrites the file only when its text changes, so a reconfigure rebuilds nothing.
  file(CONFIGURE OUTPUT ${unity_dir}/batch_${batch}.cpp CONTENT "${content}")
  list(APPEND unity_sources ${unity_dir}/batch_${batch}.cpp)
  math(EXPR batch "${batch} + 1")
  set(content "")
  set(in_batch 0)
endmacro()
