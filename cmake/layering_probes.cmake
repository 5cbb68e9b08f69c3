# ctest's proof that the build enforces the layering. A probe is one #include line compiled with a
# module's include paths (an object library linking that module, outside `all`, built by the test).
# The forbidden probe passes only when the compiler reports that very header as not found; its twin
# includes a header the module may use and must compile, so neither can pass by failing for another
# reason. All probe tests share one lock, since each runs a build in this build directory.
function(tempered_layering_probe module)
  cmake_parse_arguments(PARSE_ARGV 1 probe "" "FORBIDDEN;ALLOWED" "")
  if(NOT EXISTS ${TEMPERED_SOURCE_ROOT}/${probe_FORBIDDEN})  # else "not found" would prove nothing
    message(FATAL_ERROR "layering probe: src/${probe_FORBIDDEN} does not exist")
  endif()
  foreach(kind forbidden allowed)
    string(TOUPPER ${kind} key)
    set(header ${probe_${key}})
    string(REGEX REPLACE "/.*" "" folder ${header})
    set(name layering_probe_${module}_${kind}_${folder})
    file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/layering_probes/${name}.cpp CONTENT "#include \"${header}\"\n")
    add_library(${name} OBJECT EXCLUDE_FROM_ALL ${CMAKE_BINARY_DIR}/layering_probes/${name}.cpp)
    target_link_libraries(${name} PRIVATE tempered_${module})
    add_test(NAME layering.${module}_${kind}_${folder}
             COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target ${name})
    set_tests_properties(layering.${module}_${kind}_${folder} PROPERTIES RESOURCE_LOCK tempered_build_dir)
  endforeach()
  string(REGEX REPLACE "/.*" "" folder ${probe_FORBIDDEN})
  set_tests_properties(layering.${module}_forbidden_${folder} PROPERTIES
    PASS_REGULAR_EXPRESSION "${probe_FORBIDDEN}(: No such file|' file not found)")
endfunction()

tempered_layering_probe(models FORBIDDEN server/generation_path.h ALLOWED kv/kv_cache.h)
tempered_layering_probe(kv FORBIDDEN models/model_config.h ALLOWED kernels/cpu/ops.h)
tempered_layering_probe(kernels FORBIDDEN models/model_config.h ALLOWED core/dtype.h)
tempered_layering_probe(server FORBIDDEN cli/commands.h ALLOWED runtime/loaded_model.h)
tempered_layering_probe(grammar FORBIDDEN tokenizer/tokenizer.h ALLOWED core/result.h)
tempered_layering_probe(toolcalls FORBIDDEN engine/engine.h ALLOWED grammar/grammar.h)
tempered_layering_probe(reasoning FORBIDDEN tokenizer/tokenizer.h ALLOWED core/result.h)
tempered_layering_probe(engine FORBIDDEN server/generation_path.h ALLOWED reasoning/reasoning_parser.h)
tempered_layering_probe(disagg FORBIDDEN http/http_server.h ALLOWED engine/kv_transfer.h)
tempered_layering_probe(output FORBIDDEN engine/engine.h ALLOWED reasoning/reasoning_parser.h)
tempered_layering_probe(edge FORBIDDEN server/generation_path.h ALLOWED http/http_server.h)
tempered_layering_probe(settings FORBIDDEN server/chat_service.h ALLOWED engine/degeneration_guard.h)
tempered_layering_probe(upstream FORBIDDEN server/generation_path.h ALLOWED engine/generator.h)

# `tempered run` needs nothing of the server (issue 27): cli/run_command.cpp is compiled on its own with
# cli's own headers and every library cli links except server/ and edge/, so an #include "server/..."
# there is "file not found" here. (A probe for the whole cli library could not say it: serve links server.)
add_library(layering_probe_cli_run OBJECT EXCLUDE_FROM_ALL ${TEMPERED_SOURCE_ROOT}/cli/run_command.cpp)
target_include_directories(layering_probe_cli_run PRIVATE ${TEMPERED_MODULE_ROOTS}/cli)
target_link_libraries(layering_probe_cli_run PRIVATE tempered_api tempered_chat tempered_engine tempered_kv
                      tempered_runtime tempered_sampling tempered_settings CLI11::CLI11 nlohmann_json::nlohmann_json)
add_test(NAME layering.cli_run_without_server COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target layering_probe_cli_run)
set_tests_properties(layering.cli_run_without_server PROPERTIES RESOURCE_LOCK tempered_build_dir)
