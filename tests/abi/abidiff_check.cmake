# abidiff_check.cmake — the abi.abidiff test and the abi_accept_baseline target
# (see abidiff.cmake). Builds abidiff_probe.c against <tessera/abi.h>, dumps its
# types with `abidw` and compares them with the committed abidiff_baseline.abi
# with `abidiff`. Passes only when every difference is an append: data members
# added after the last member of a growable struct, new types, new enumerators.
#
#   cmake -DMODE=check|accept -DCOMPILER=cc -DABIDW=... -DABIDIFF=...
#         -DSOURCE_DIR=tests/abi -DHEADER_DIR=abi/include -DDLPACK_DIR=...
#         -DBASELINE=.../abidiff_baseline.abi -DWORK_DIR=...
#         -P abidiff_check.cmake
#
# MODE=check also builds variants of the header (edited copies in WORK_DIR) and
# requires the verdicts below, so that every run proves the check can fail.
# MODE=accept rewrites BASELINE from the current header; it refuses anything
# but an append unless the environment has TESSERA_ABI_ACCEPT_BREAK=1 (a new
# major version).
cmake_minimum_required(VERSION 3.20)

foreach(var MODE COMPILER SOURCE_DIR HEADER_DIR DLPACK_DIR BASELINE WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "abidiff_check.cmake: ${var} is not set")
  endif()
endforeach()
foreach(tool ABIDW ABIDIFF)
  if(NOT ${tool} OR NOT EXISTS "${${tool}}")
    message(FATAL_ERROR "abidiff_check.cmake: `${tool}` not found (${${tool}}). Install Debian's "
                        "abigail-tools (`sudo apt-get install abigail-tools`, or scripts/bootstrap.sh) "
                        "and reconfigure (`cmake build/release`).")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Builds the probe against the abi.h in `include_dir` (and dlpack.h in the
# optional third argument), writes WORK_DIR/<name>.abi.
function(tsr_probe_dump name include_dir)
  set(dlpack "${DLPACK_DIR}")
  if(ARGC GREATER 2 AND EXISTS "${ARGV2}/dlpack/dlpack.h")
    set(dlpack "${ARGV2}")
  endif()
  execute_process(
    COMMAND "${COMPILER}" -std=c99 -g -O0 -fPIC -shared -fvisibility=hidden
            "-I${include_dir}" -isystem "${dlpack}"
            abidiff_probe.c -o "${WORK_DIR}/${name}.so"
    WORKING_DIRECTORY "${SOURCE_DIR}" # a relative source name keeps paths out of the dump
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "building the abidiff probe (${name}) failed:\n${out}")
  endif()
  # No paths, locations or architecture: the baseline must not depend on the checkout.
  execute_process(
    COMMAND "${ABIDW}" --no-corpus-path --no-comp-dir-path --no-show-locs --no-architecture
            --no-elf-needed --type-id-style hash
            --out-file "${WORK_DIR}/${name}.abi" "${WORK_DIR}/${name}.so"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "abidw failed on the probe (${name}):\n${out}")
  endif()
endfunction()

# Highest layout-offset-in-bits of a data member of struct `s` in abixml `file`
# (-1 when the struct is absent).
function(tsr_last_member_offset file s out_var)
  file(READ "${file}" xml)
  set(best -1)
  string(FIND "${xml}" "<class-decl name='${s}' size-in-bits=" b)
  if(NOT b EQUAL -1)
    string(SUBSTRING "${xml}" ${b} -1 xml)
    string(FIND "${xml}" "</class-decl>" e)
    string(SUBSTRING "${xml}" 0 ${e} xml)
    string(REGEX MATCHALL "layout-offset-in-bits='[0-9]+'" offs "${xml}")
    foreach(o IN LISTS offs)
      string(REGEX REPLACE "[^0-9]" "" o "${o}")
      if(o GREATER best)
        set(best ${o})
      endif()
    endforeach()
  endif()
  set(${out_var} ${best} PARENT_SCOPE)
endfunction()

# Frozen value types (TsrVersion, TsrValue, DLPack's): no append allowed either.
file(READ "${SOURCE_DIR}/abi_manifest.h" manifest)
string(REGEX MATCHALL "TSR_M_STRUCT\\([A-Za-z0-9_]+, *frozen\\)" frozen "${manifest}")
string(REGEX REPLACE "TSR_M_STRUCT\\(([A-Za-z0-9_]+), *frozen\\)" "\\1" frozen "${frozen}")

# Gate 1: abidiff's leaf report, read fail-closed: any line not known to describe
# an append is a break. (A suppression with has_data_member_inserted_at = end
# would not do: it also hides a retyped member of a struct that had a member
# appended.) Sets <verdict_var> to "append" or "break", <why_var> to the first
# offending line, <report_var> to the report.
function(tsr_leaf_gate old new verdict_var why_var report_var)
  execute_process(
    COMMAND "${ABIDIFF}" --no-default-suppression --leaf-changes-only --harmless --no-show-locs
            --no-architecture
            --show-bits --show-dec "${old}" "${new}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE report ERROR_VARIABLE err)
  set(${report_var} "${report}${err}" PARENT_SCOPE)
  set(${verdict_var} break PARENT_SCOPE)
  # Exit status bits: 1 error, 2 usage, 4 ABI change, 8 incompatible change.
  if(NOT rc MATCHES "^[0-9]+$" OR rc EQUAL 1 OR rc EQUAL 2 OR rc EQUAL 3)
    message(FATAL_ERROR "abidiff ${old} ${new} failed (${rc}):\n${report}${err}")
  endif()
  if(rc EQUAL 0)
    set(${verdict_var} append PARENT_SCOPE)
    set(${why_var} "" PARENT_SCOPE)
    return()
  endif()
  math(EXPR incompatible "${rc} & 8")
  if(NOT incompatible EQUAL 0)
    set(${why_var} "abidiff reports an incompatible change (exit status ${rc})" PARENT_SCOPE)
    return()
  endif()

  set(kind "")    # struct or enum block being read
  set(name "")
  set(last -1)    # its last member's offset in `old`
  set(rest "${report}\n")
  while(NOT rest STREQUAL "")
    string(FIND "${rest}" "\n" nl)
    string(SUBSTRING "${rest}" 0 ${nl} line)
    math(EXPR nl "${nl} + 1")
    string(SUBSTRING "${rest}" ${nl} -1 rest)
    set(ok FALSE)
    if(line STREQUAL "" OR line MATCHES "^(Leaf changes summary|Changed leaf types summary):")
      set(ok TRUE)
    elseif(line MATCHES "^Removed/Changed/Added (functions|variables) summary: 0 Removed, 0 Changed, [0-9]+ Added")
      set(ok TRUE)
    elseif(line MATCHES "^[0-9]+ Added functions?:$")
      set(kind added)
      set(ok TRUE)
    elseif(kind STREQUAL "added" AND line MATCHES "^  \\[A\\] 'function void tsr_abidiff_[A-Za-z0-9_]+\\(")
      set(ok TRUE) # the probe of a new type
    elseif(line MATCHES "^'struct ([A-Za-z0-9_]+)' changed:$")
      set(kind struct)
      set(name "${CMAKE_MATCH_1}")
      if(NOT name IN_LIST frozen)
        tsr_last_member_offset("${old}" "${name}" last)
        set(ok TRUE)
      endif()
    elseif(line MATCHES "^'enum ([A-Za-z0-9_]+)' changed:$")
      set(kind enum)
      set(ok TRUE)
    elseif(kind MATCHES "^(struct|enum)$" AND line STREQUAL "  type size hasn't changed")
      set(ok TRUE)
    elseif(kind STREQUAL "struct" AND line MATCHES "^  type size changed from ([0-9]+) to ([0-9]+) \\(in bits\\)$")
      if(CMAKE_MATCH_2 GREATER CMAKE_MATCH_1)
        set(ok TRUE)
      endif()
    elseif(kind STREQUAL "struct" AND line MATCHES "^  [0-9]+ data member insertions?:$")
      set(ok TRUE)
    elseif(kind STREQUAL "struct" AND line MATCHES "^    '.*', at offset ([0-9]+) \\(in bits\\)$")
      # Inserted after every member the struct had: an append (also into tail padding).
      if(last GREATER_EQUAL 0 AND CMAKE_MATCH_1 GREATER last)
        set(ok TRUE)
      endif()
    elseif(kind STREQUAL "enum" AND line MATCHES "^  [0-9]+ enumerator insertions?:$")
      set(ok TRUE)
    elseif(kind STREQUAL "enum" AND line MATCHES "^    '[A-Za-z0-9_:]+' value '-?[0-9]+'$")
      set(ok TRUE) # a new constant
    endif()
    if(NOT ok)
      if(kind STREQUAL "struct" AND name IN_LIST frozen)
        set(line "${line}  <- ${name} is a frozen value type")
      elseif(kind STREQUAL "struct" AND line MATCHES ", at offset [0-9]+ \\(in bits\\)$")
        set(line "${line}  <- not after ${name}'s last member (at ${last} bits)")
      endif()
      set(${why_var} "${line}" PARENT_SCOPE)
      return()
    endif()
  endwhile()
  set(${verdict_var} append PARENT_SCOPE)
  set(${why_var} "" PARENT_SCOPE)
endfunction()


# <new> with what may be appended removed, written to <out>: data members after
# the last member a struct has in <old> (not in frozen structs), enumerators
# <old> lacks, and the probe functions of types <old> lacks.
function(tsr_strip_appends old new out)
  file(READ "${old}" oldx)
  file(READ "${new}" newx)
  string(REGEX MATCHALL "<class-decl name='[A-Za-z0-9_]+' size-in-bits='[0-9]+'" heads "${oldx}")
  foreach(h IN LISTS heads)
    string(REGEX REPLACE "^<class-decl name='([A-Za-z0-9_]+)' size-in-bits='([0-9]+)'$" "\\1" s "${h}")
    string(REGEX REPLACE "^<class-decl name='([A-Za-z0-9_]+)' size-in-bits='([0-9]+)'$" "\\2" size "${h}")
    if(s IN_LIST frozen)
      continue()
    endif()
    tsr_last_member_offset("${old}" "${s}" last)
    string(FIND "${newx}" "<class-decl name='${s}' size-in-bits=" b)
    if(b EQUAL -1)
      continue()
    endif()
    string(SUBSTRING "${newx}" ${b} -1 block)
    string(FIND "${block}" "</class-decl>" e)
    string(SUBSTRING "${block}" 0 ${e} block)
    set(stripped "${block}")
    string(REGEX MATCHALL "<data-member [^>]*layout-offset-in-bits='[0-9]+'>[^<]*<var-decl [^>]*/>[^<]*</data-member>"
           members "${block}")
    foreach(m IN LISTS members)
      string(REGEX MATCH "layout-offset-in-bits='([0-9]+)'" _ "${m}")
      if(CMAKE_MATCH_1 GREATER last)
        string(REPLACE "${m}" "" stripped "${stripped}")
      endif()
    endforeach()
    string(REGEX REPLACE "^<class-decl name='${s}' size-in-bits='[0-9]+'" "<class-decl name='${s}' size-in-bits='${size}'"
           stripped "${stripped}")
    string(REPLACE "${block}" "${stripped}" newx "${newx}")
  endforeach()

  string(REGEX MATCHALL "<enum-decl name='[A-Za-z0-9_]+'" heads "${oldx}")
  foreach(h IN LISTS heads)
    string(FIND "${oldx}" "${h}" b)
    string(SUBSTRING "${oldx}" ${b} -1 oldblock)
    string(FIND "${oldblock}" "</enum-decl>" e)
    string(SUBSTRING "${oldblock}" 0 ${e} oldblock)
    string(FIND "${newx}" "${h}" b)
    if(b EQUAL -1)
      continue()
    endif()
    string(SUBSTRING "${newx}" ${b} -1 block)
    string(FIND "${block}" "</enum-decl>" e)
    string(SUBSTRING "${block}" 0 ${e} block)
    set(stripped "${block}")
    string(REGEX MATCHALL "<enumerator name='[A-Za-z0-9_]+' value='-?[0-9]+'/>" enumerators "${block}")
    foreach(x IN LISTS enumerators)
      string(FIND "${oldblock}" "${x}" at)
      if(at EQUAL -1)
        string(REPLACE "${x}" "" stripped "${stripped}")
      endif()
    endforeach()
    string(REPLACE "${block}" "${stripped}" newx "${newx}")
  endforeach()

  string(REGEX MATCHALL "<elf-symbol name='tsr_abidiff_[A-Za-z0-9_]+'" syms "${newx}")
  foreach(sym IN LISTS syms)
    string(FIND "${oldx}" "${sym}" at)
    if(at EQUAL -1)
      string(REGEX REPLACE "^<elf-symbol name='([A-Za-z0-9_]+)'$" "\\1" f "${sym}")
      string(REGEX REPLACE "<elf-symbol name='${f}' [^>]*/>" "" newx "${newx}")
      string(FIND "${newx}" "<function-decl name='${f}' " b)
      string(SUBSTRING "${newx}" ${b} -1 block)
      string(FIND "${block}" "</function-decl>" e)
      math(EXPR e "${e} + 16")
      string(SUBSTRING "${block}" 0 ${e} block)
      string(REPLACE "${block}" "" newx "${newx}")
    endif()
  endforeach()
  file(WRITE "${out}" "${newx}")
endfunction()

# Compares two dumps. Sets <verdict_var> to "append" (identical, or only appends)
# or "break", and <why_var> to the reason. Gate 2 checks what gate 1 cannot:
# <new> with its appends stripped must be identical to <old> for abidiff's full
# report, which sees changes the leaf report filters (a slot's parameter losing
# its const, a retyped member inside a struct that was also appended to).
function(tsr_classify old new verdict_var why_var report_var)
  tsr_leaf_gate("${old}" "${new}" verdict why report)
  set(${report_var} "${report}" PARENT_SCOPE)
  set(${verdict_var} "${verdict}" PARENT_SCOPE)
  set(${why_var} "${why}" PARENT_SCOPE)
  if(NOT verdict STREQUAL "append")
    return()
  endif()
  get_filename_component(stem "${new}" NAME_WE)
  set(stripped "${WORK_DIR}/${stem}.stripped.abi")
  tsr_strip_appends("${old}" "${new}" "${stripped}")
  execute_process(
    COMMAND "${ABIDIFF}" --no-default-suppression --harmless --no-show-locs --no-architecture
            --show-bits --show-dec "${old}" "${stripped}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE full ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    set(${verdict_var} break PARENT_SCOPE)
    set(${why_var} "with its appends removed, the new dump still differs (abidiff exit status ${rc})"
        PARENT_SCOPE)
    set(${report_var} "${report}\nabidiff's full report after removing the appends:\n${full}${err}"
        PARENT_SCOPE)
  endif()
endfunction()

# --- the current header -------------------------------------------------------
tsr_probe_dump(current "${HEADER_DIR}")
set(current "${WORK_DIR}/current.abi")

# Every typedef abi.h declares must be in the dump (the manifest could miss one).
file(READ "${HEADER_DIR}/tessera/abi.h" header)
# (`;` would split CMake lists: scan a copy with `@` in its place.)
string(REPLACE ";" "@" scan "${header}")
string(REGEX MATCHALL "\n} Tsr[A-Za-z0-9_]+@" a "${scan}")
string(REGEX MATCHALL "\ntypedef [^@(\n]+ Tsr[A-Za-z0-9_]+@" b "${scan}")
string(REGEX MATCHALL "\ntypedef [^@\n]*\\(\\*Tsr[A-Za-z0-9_]+\\)\\(" c "${scan}")
set(declared ${a} ${b} ${c})
list(TRANSFORM declared REPLACE "^.*[ *](Tsr[A-Za-z0-9_]+)[)@(]*$" "\\1")
list(LENGTH declared ndeclared)
file(READ "${current}" current_xml)
set(missing "")
foreach(t IN LISTS declared)
  string(FIND "${current_xml}" "<typedef-decl name='${t}' " at)
  if(at EQUAL -1)
    list(APPEND missing ${t})
  endif()
endforeach()
if(ndeclared LESS 10 OR missing)
  list(JOIN missing ", " missing)
  message(FATAL_ERROR "abi.h declares types the abidiff probe does not hold: ${missing} "
                      "(found ${ndeclared} typedefs in abi.h). List them in tests/abi/abi_manifest.h.")
endif()
message(STATUS "probe holds all ${ndeclared} typedefs of abi.h")

if(NOT EXISTS "${BASELINE}")
  if(MODE STREQUAL "accept")
    file(COPY_FILE "${current}" "${BASELINE}")
    message(STATUS "wrote the first ${BASELINE}")
    return()
  endif()
  message(FATAL_ERROR "no baseline ${BASELINE}")
endif()
tsr_classify("${BASELINE}" "${current}" verdict why report)

if(MODE STREQUAL "accept")
  if(NOT verdict STREQUAL "append" AND NOT "$ENV{TESSERA_ABI_ACCEPT_BREAK}" STREQUAL "1")
    message(FATAL_ERROR "abi.h differs from ${BASELINE} by more than appends:\n  ${why}\n\n${report}\n"
                        "Refusing: that needs a new major ABI version (docs/abi.md §6). "
                        "If it is one, rerun with TESSERA_ABI_ACCEPT_BREAK=1 in the environment.")
  endif()
  file(COPY_FILE "${current}" "${BASELINE}")
  message(STATUS "wrote ${BASELINE} from abi.h; review and commit it with the header\n${report}")
  return()
endif()

if(NOT verdict STREQUAL "append")
  message(FATAL_ERROR "ABI BREAK: <tessera/abi.h> differs from ${BASELINE} "
                      "by more than appends (docs/abi.md §6):\n  ${why}\n\nabidiff's report:\n${report}")
endif()
if(report MATCHES "changed:")
  message(STATUS "abi.h only appends to the baseline (accept with the abi_accept_baseline target):\n${report}")
else()
  message(STATUS "abi.h matches the baseline")
endif()

# --- self-test: edited copies of the header must get the right verdict --------------
# The layout static_asserts would stop the edited copies from compiling: drop them.
string(FIND "${header}" "#if defined(__LP64__) || defined(_WIN64)" b)
if(NOT b EQUAL -1)
  string(SUBSTRING "${header}" 0 ${b} head)
  string(SUBSTRING "${header}" ${b} -1 tail)
  string(FIND "${tail}" "\n#endif" e)
  math(EXPR e "${e} + 7")
  string(SUBSTRING "${tail}" ${e} -1 tail)
  set(header "${head}${tail}")
endif()

# Replaces `from` by `to` inside `typedef struct S { ... } S;` of text variable `var`.
function(tsr_struct_edit var s from to)
  set(text "${${var}}")
  string(FIND "${text}" "typedef struct ${s} {" b)
  string(FIND "${text}" "\n} ${s};" e)
  if(b EQUAL -1 OR e EQUAL -1)
    message(FATAL_ERROR "self-test: struct ${s} not found in abi.h; update abidiff_check.cmake")
  endif()
  math(EXPR n "${e} - ${b}")
  string(SUBSTRING "${text}" ${b} ${n} block)
  string(FIND "${block}" "${from}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "self-test: `${from}` not found in struct ${s} of abi.h; update abidiff_check.cmake")
  endif()
  string(REPLACE "${from}" "${to}" edited "${block}")
  string(REPLACE "${block}" "${edited}" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

function(tsr_struct_append var s decl)
  set(text "${${var}}")
  string(FIND "${text}" "\n} ${s};" e)
  if(e EQUAL -1)
    message(FATAL_ERROR "self-test: struct ${s} not found in abi.h; update abidiff_check.cmake")
  endif()
  string(REPLACE "\n} ${s};" "\n  ${decl}\n} ${s};" text "${text}")
  set(${var} "${text}" PARENT_SCOPE)
endfunction()

set(failures "")
# Dumps the variant `name` (header text in `text`), compares it with the dump
# `against` and checks the verdict.
# An optional fifth argument is the text of a dlpack.h to use instead.
function(tsr_expect name text against expected)
  if(ARGC GREATER 4)
    file(WRITE "${WORK_DIR}/${name}/dlpack/dlpack.h" "${ARGV4}")
  elseif(NOT name STREQUAL "unchanged" AND text STREQUAL header)
    message(FATAL_ERROR "self-test ${name}: the edit left abi.h unchanged; update abidiff_check.cmake")
  endif()
  file(WRITE "${WORK_DIR}/${name}/tessera/abi.h" "${text}")
  tsr_probe_dump(${name} "${WORK_DIR}/${name}" "${WORK_DIR}/${name}")
  tsr_classify("${against}" "${WORK_DIR}/${name}.abi" verdict why report)
  if(verdict STREQUAL expected)
    message(STATUS "self-test ${name}: ${verdict} as expected ${why}")
  else()
    set(failures "${failures}\n  ${name}: expected ${expected}, got ${verdict} ${why}\n${report}"
        PARENT_SCOPE)
  endif()
endfunction()

tsr_expect(unchanged "${header}" "${current}" append)

set(v "${header}")
tsr_struct_append(v TsrKernelCall "int32_t tsr_appended;")
tsr_struct_append(v TsrError "const char* tsr_appended;") # reached through every slot
tsr_expect(append "${v}" "${current}" append)
# A second append that fits in the tail padding the first one left.
tsr_struct_append(v TsrKernelCall "int32_t tsr_appended_2;")
tsr_expect(append_into_padding "${v}" "${WORK_DIR}/append.abi" append)

# A new type, reached through a new slot and through a probe function of its own
# (as listing it in abi_manifest.h would add).
set(v "${header}")
string(CONCAT new_type "\ntypedef struct TsrNewThing {\n  size_t struct_size;\n  int32_t x;\n} TsrNewThing;\n"
       "__attribute__((visibility(\"default\"))) void tsr_abidiff_TsrNewThing(const TsrNewThing* p) { (void)p; }\n"
       "typedef struct TsrHostApi {")
string(REPLACE "\ntypedef struct TsrHostApi {" "${new_type}" v "${v}")
tsr_struct_append(v TsrHostApi "TsrError* (*tsr_new_slot)(TsrHostContext context, const TsrNewThing* thing);")
tsr_expect(new_type "${v}" "${current}" append)

# DLPack's enum: a new device type is a new constant; a changed value is a break.
file(READ "${DLPACK_DIR}/dlpack/dlpack.h" dlpack)
foreach(edit "new_enumerator|kDLCPU = 1,|kDLCPU = 1, kDLTsrSelfTest = 1000,|append"
             "changed_enumerator|kDLCPU = 1,|kDLCPU = 100,|break")
  string(REPLACE "|" ";" edit "${edit}")
  list(GET edit 0 name)
  list(GET edit 1 from)
  list(GET edit 2 to)
  list(GET edit 3 expected)
  string(REPLACE "${from}" "${to}" d "${dlpack}")
  if(d STREQUAL dlpack)
    message(FATAL_ERROR "self-test ${name}: `${from}` not found in dlpack.h; update abidiff_check.cmake")
  endif()
  tsr_expect(${name} "${header}" "${current}" ${expected} "${d}")
endforeach()

set(v "${header}")
tsr_struct_edit(v TsrKernelCall "  const char* op_name;" "  const char* op_name;\n  int32_t tsr_inserted;")
tsr_expect(insert_in_middle "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrCopyRequest "  int32_t reserved;" "  uint32_t reserved;") # same size and offset
tsr_expect(retype_field "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrCopyRequest "  int32_t reserved;" "  uint32_t reserved;")
tsr_struct_append(v TsrCopyRequest "int32_t tsr_appended;")
tsr_expect(retype_and_append "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrDeviceTypeDesc "(*device_count)(void* context, int32_t* count)"
                "(*device_count)(void* context, uint32_t* count)")
tsr_expect(slot_parameter "${v}" "${current}" break)

set(v "${header}")
string(REPLACE "typedef TsrError* (*TsrKernelFn)(const TsrKernelCall* call);"
               "typedef TsrError* (*TsrKernelFn)(TsrKernelCall* call);" v "${header}")
tsr_expect(fn_typedef_parameter "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrKernelCall "\n  TsrError* (*workspace)(const struct TsrKernelCall* call, size_t nbytes, void** ptr);" "")
tsr_expect(remove_last_field "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrCopyRequest "  int32_t dst_device_index;" "  int32_t tsr_tmp;")
tsr_struct_edit(v TsrCopyRequest "  int32_t src_device_index;" "  int32_t dst_device_index;")
tsr_struct_edit(v TsrCopyRequest "  int32_t tsr_tmp;" "  int32_t src_device_index;")
tsr_expect(reorder_fields "${v}" "${current}" break)

set(v "${header}")
tsr_struct_edit(v TsrKernelDesc "  uint64_t dtype_mask;" "  uint64_t dtypes;")
tsr_expect(rename_field "${v}" "${current}" break)

set(v "${header}")
tsr_struct_append(v TsrVersion "uint32_t patch;")
tsr_expect(append_to_frozen "${v}" "${current}" break)

set(v "${header}")
string(REPLACE "typedef int32_t TsrDType;" "typedef int64_t TsrDType;" v "${header}")
tsr_expect(retype_typedef "${v}" "${current}" break)

if(failures)
  message(FATAL_ERROR "the abidiff check's self-test failed (the classification is wrong):${failures}")
endif()
message(STATUS "ok")
