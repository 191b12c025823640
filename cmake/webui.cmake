# The web chat page (webui/) embedded in the binary: built by webui/build.sh (node + npm, at build
# time only) and turned into a C++ source by embed_webui.cmake, compiled into `target`. Without
# node/npm, or with HEARTH_WEBUI=OFF, the binary carries no page and `GET /` says so.
option(HEARTH_WEBUI "Build the web chat page into the server (needs node and npm at build time)" ON)

function(hearth_embed_webui target)
  set(embed_script ${PROJECT_SOURCE_DIR}/cmake/embed_webui.cmake)
  find_program(HEARTH_NODE node)
  find_program(HEARTH_NPM npm)
  if(NOT HEARTH_WEBUI OR NOT HEARTH_NODE OR NOT HEARTH_NPM)
    if(NOT HEARTH_WEBUI)
      set(why "HEARTH_WEBUI is OFF (reconfigure with -DHEARTH_WEBUI=ON to include it)")
    else()
      string(CONCAT why "node and npm were not both found (node: ${HEARTH_NODE}, "
                        "npm: ${HEARTH_NPM}); install them and reconfigure to include it")
    endif()
    message(WARNING "hearth: building without the web chat page: ${why}. "
                    "`hearth serve` will answer GET / with a 404 that says so.")
    # Its own folder: a file of the same path as the built page's would look up to date to make
    # when the option is turned on again.
    set(out ${CMAKE_BINARY_DIR}/webui-none/webui_assets.cpp)
    execute_process(COMMAND ${CMAKE_COMMAND} -DOUT=${out} -P ${embed_script}
                    COMMAND_ERROR_IS_FATAL ANY)
    target_sources(${target} PRIVATE ${out})
    return()
  endif()

  set(dir ${CMAKE_BINARY_DIR}/webui)
  set(out ${dir}/webui_assets.cpp)
  # CONFIGURE_DEPENDS: a page source added or removed (or the lockfile appearing) reconfigures.
  file(GLOB_RECURSE page_srcs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/webui/src/*)
  file(GLOB package_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/webui/package*.json)
  set(built)
  foreach(name index.html app.js app.css)
    list(APPEND built ${dir}/${name} ${dir}/${name}.gz)
  endforeach()
  add_custom_command(
    OUTPUT ${out}
    BYPRODUCTS ${built}
    COMMAND bash ${PROJECT_SOURCE_DIR}/webui/build.sh ${dir}
    COMMAND ${CMAKE_COMMAND} -DIN_DIR=${dir} -DOUT=${out} -P ${embed_script}
    DEPENDS ${page_srcs} ${package_files} ${PROJECT_SOURCE_DIR}/webui/build.mjs
            ${PROJECT_SOURCE_DIR}/webui/build.sh ${embed_script}
    COMMENT "Building the web chat page (webui/build.sh) and embedding it"
    VERBATIM)
  target_sources(${target} PRIVATE ${out})
endfunction()
