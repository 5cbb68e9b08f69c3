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
function(tempered_unity target)
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
  list(LENGTH batched count)
  set(unity_sources "")
  set(index 0)
  while(index LESS count)
    math(EXPR batch "${index} / ${TEMPERED_UNITY_BATCH}")
    set(content "")
    foreach(offset RANGE 1 ${TEMPERED_UNITY_BATCH})
      if(index LESS count)
        list(GET batched ${index} path)
        file(RELATIVE_PATH relative ${unity_dir} ${path})
        string(APPEND content "#include \"${relative}\"\n")
        math(EXPR index "${index} + 1")
      endif()
    endforeach()
    # CONFIGURE rewrites the file only when its text changes, so a reconfigure rebuilds nothing.
    file(CONFIGURE OUTPUT ${unity_dir}/batch_${batch}.cpp CONTENT "${content}")
    list(APPEND unity_sources ${unity_dir}/batch_${batch}.cpp)
  endwhile()
  set_property(TARGET ${target} PROPERTY SOURCES ${alone} ${unity_sources})
endfunction()
