# The web playground (webui/, served at / by src/server/webui_routes.cpp) and the Debian libjs-* files it
# loads are compiled into tempered_server, so the binary serves the page with no file or network access.
# marked and DOMPurify come from Debian packages (scripts/install_deps.sh) and are copied at build time.
set(TEMPERED_WEBUI_SOURCES
    ${CMAKE_SOURCE_DIR}/webui/index.html
    ${CMAKE_SOURCE_DIR}/webui/style.css
    ${CMAKE_SOURCE_DIR}/webui/app.js
    ${CMAKE_SOURCE_DIR}/webui/api.js
    ${CMAKE_SOURCE_DIR}/webui/conversations.js
    ${CMAKE_SOURCE_DIR}/webui/markdown.js
    ${CMAKE_SOURCE_DIR}/webui/sampling_panel.js
    ${CMAKE_SOURCE_DIR}/webui/server_panel.js
    ${CMAKE_SOURCE_DIR}/webui/message_view.js)
set(TEMPERED_WEBUI_LIBRARIES
    /usr/share/javascript/marked/marked.umd.min.js  # libjs-marked
    /usr/share/nodejs/dompurify/dist/purify.min.js)  # node-dompurify
foreach(library ${TEMPERED_WEBUI_LIBRARIES})
  if(NOT EXISTS ${library})
    message(FATAL_ERROR "${library} is missing: run scripts/install_deps.sh (libjs-marked, node-dompurify)")
  endif()
endforeach()

set(webui_generated ${CMAKE_BINARY_DIR}/generated/webui_files.cpp)
set(webui_inputs ${TEMPERED_WEBUI_SOURCES} ${TEMPERED_WEBUI_LIBRARIES})
list(JOIN webui_inputs "|" webui_input_list)
add_custom_command(
  OUTPUT ${webui_generated}
  COMMAND ${CMAKE_COMMAND} -DOUTPUT=${webui_generated} "-DFILES=${webui_input_list}"
          -P ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
  DEPENDS ${webui_inputs} ${CMAKE_SOURCE_DIR}/cmake/embed_files.cmake
  COMMENT "Embedding the web UI"
  VERBATIM)
# tempered_server lives in src/: the rule above is this directory's, so a target here runs it first.
add_custom_target(tempered_webui_files DEPENDS ${webui_generated})
set_source_files_properties(${webui_generated} TARGET_DIRECTORY tempered_server PROPERTIES GENERATED TRUE)
target_sources(tempered_server PRIVATE ${webui_generated})
add_dependencies(tempered_server tempered_webui_files)
