# The trust-zone check (lazaret_zone, lazaret_check_zones in the top-level
# CMakeLists.txt) fails a configure that breaks a zone rule and passes one
# that keeps them: the real functions, taken from the top-level
# CMakeLists.txt, configure a tiny project of one folder per zone, once
# clean and once per violation.
#   cmake -DLAZARET_ROOT=<source> -DWORK=<scratch dir> -P zone_check_test.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var LAZARET_ROOT WORK)
  if(NOT ${var})
    message(FATAL_ERROR "-D${var}=... is required")
  endif()
endforeach()

file(READ "${LAZARET_ROOT}/CMakeLists.txt" top)
string(FIND "${top}" "# --- Trust zones" begin)
string(FIND "${top}" "# --- End of trust zones ---" end)
if(begin EQUAL -1 OR end EQUAL -1)
  message(FATAL_ERROR "the trust-zone section is not in ${LAZARET_ROOT}/CMakeLists.txt")
endif()
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${top}" ${begin} ${length} zones)

set(failures "")

# Configures the tiny project with `extra` appended to the CMakeLists.txt of
# folder `where`; `expect` is empty for a clean configure, or a text the
# failure must contain.
function(try_case name where extra expect)
  set(src "${WORK}/${name}")
  file(REMOVE_RECURSE "${src}")
  file(WRITE "${src}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.25)
project(zones_tiny LANGUAGES C)
${zones}
add_subdirectory(shared)
add_subdirectory(sandbox)
add_subdirectory(sidecar)
add_subdirectory(alpha)
add_subdirectory(beta)
add_subdirectory(client)
add_subdirectory(tests)
lazaret_check_zones()
")
  file(WRITE "${src}/lib.c" "int lib(void) { return 0; }\n")
  file(WRITE "${src}/main.c" "int main(void) { return 0; }\n")
  set(folders shared sandbox sidecar alpha beta client tests)
  set(decl_shared "lazaret_zone(ZONE shared RUNS \"anywhere\" AS \"anyone\" DISTRUSTS \"all\")")
  set(decl_sandbox "lazaret_zone(ZONE sandbox RUNS \"sandbox\" AS \"agent\" DISTRUSTS \"all\")")
  set(decl_sidecar "lazaret_zone(ZONE sidecar RUNS \"sidecar\" AS \"root\" DISTRUSTS \"all\")")
  set(decl_alpha "lazaret_zone(ZONE host-service SERVICE alpha RUNS \"host\" AS \"user\" DISTRUSTS \"all\")")
  set(decl_beta "lazaret_zone(ZONE host-helper SERVICE beta RUNS \"host\" AS \"root\" DISTRUSTS \"all\")")
  set(decl_client "lazaret_zone(ZONE host-client RUNS \"host\" AS \"user\" DISTRUSTS \"all\")")
  set(decl_tests "")
  set(body_shared "add_library(shared_lib STATIC ../lib.c)")
  set(body_sandbox "add_library(sandbox_lib STATIC ../lib.c)\ntarget_link_libraries(sandbox_lib PUBLIC shared_lib)\nadd_executable(in-sandbox ../main.c)\ntarget_link_libraries(in-sandbox PRIVATE sandbox_lib)")
  set(body_sidecar "add_executable(router ../main.c)\ntarget_link_libraries(router PRIVATE shared_lib)")
  set(body_alpha "add_library(alpha_lib STATIC ../lib.c)\ntarget_link_libraries(alpha_lib PRIVATE shared_lib)\nadd_executable(alphad ../main.c)\ntarget_link_libraries(alphad PRIVATE alpha_lib)")
  set(body_beta "add_library(beta_lib STATIC ../lib.c)\ntarget_link_libraries(beta_lib PUBLIC shared_lib)")
  set(body_client "add_library(client_lib STATIC ../lib.c)\ntarget_link_libraries(client_lib PUBLIC alpha_lib beta_lib)\nadd_executable(cli ../main.c)\ntarget_link_libraries(cli PRIVATE client_lib)")
  # A test may link anything.
  set(body_tests "add_library(test_support STATIC ../lib.c)\nadd_library(fixture_lib STATIC ../lib.c)\nadd_executable(everything_test ../main.c)\ntarget_link_libraries(everything_test PRIVATE client_lib sandbox_lib test_support)")
  foreach(f IN LISTS folders)
    set(text "${decl_${f}}\n${body_${f}}\n")
    if(f STREQUAL where)
      string(APPEND text "${extra}\n")
    endif()
    file(WRITE "${src}/${f}/CMakeLists.txt" "${text}")
  endforeach()
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${src}" -B "${src}/build"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect STREQUAL "")
    if(NOT rc EQUAL 0)
      set(failures "${failures}\n${name}: the clean project failed to configure:\n${err}"
          PARENT_SCOPE)
    endif()
  elseif(rc EQUAL 0)
    set(failures "${failures}\n${name}: configured although it breaks a zone rule" PARENT_SCOPE)
  else()
    string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")
    string(FIND "${flat}" "${expect}" at)
    if(at EQUAL -1)
      set(failures "${failures}\n${name}: failed without \"${expect}\":\n${err}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

try_case(clean "" "" "")
try_case(sandbox_links_host sandbox
         "target_link_libraries(sandbox_lib PUBLIC client_lib)"
         "sandbox_lib [sandbox] links client_lib [host-client]: code in the sandbox links only sandbox and shared code")
try_case(sidecar_links_service sidecar
         "target_link_libraries(router PRIVATE beta_lib)"
         "router [sidecar] links beta_lib [host-helper beta]: the sidecar links only sidecar and shared code")
try_case(service_links_service alpha
         "target_link_libraries(alpha_lib PRIVATE beta_lib)"
         "alpha_lib [host-service alpha] links beta_lib [host-helper beta]: a service links no other service's library")
try_case(shared_links_host shared
         "target_link_libraries(shared_lib PUBLIC client_lib)"
         "shared_lib [shared] links client_lib [host-client]: shared code links only shared code")
try_case(undeclared_folder client
         "set_directory_properties(PROPERTIES LAZARET_ZONE \"\")"
         "client_lib (${WORK}/undeclared_folder/client): its folder declares no zone")
try_case(zoned_links_undeclared alpha
         "target_link_libraries(alpha_lib PRIVATE fixture_lib)"
         "alpha_lib [host-service alpha] links fixture_lib []: the library's folder declares no zone")
try_case(exception_is_only_reported alpha
         "target_link_libraries(alpha_lib PRIVATE beta_lib)\nset(LAZARET_ZONE_EXCEPTIONS alpha_lib>beta_lib PARENT_SCOPE)"
         "")

if(failures)
  message(FATAL_ERROR "zone check:${failures}")
endif()
message(STATUS "zone check: every violation refused, the clean project configured")
