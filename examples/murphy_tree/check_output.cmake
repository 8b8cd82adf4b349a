# Runs the example on TREE and compares its stdout with EXPECTED; when README is given,
# also checks that it quotes EXPECTED verbatim, so the numbers a reader sees are the
# numbers the program prints.
execute_process(COMMAND ${EXE} ${TREE} OUTPUT_VARIABLE actual RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "murphy_tree_example exited with ${rc}")
endif()
file(WRITE ${ACTUAL} "${actual}")
file(READ ${EXPECTED} expected)
if(NOT actual STREQUAL expected)
  message(FATAL_ERROR "output differs from ${EXPECTED}; see: diff ${EXPECTED} ${ACTUAL}")
endif()
if(DEFINED README)
  file(READ ${README} readme)
  string(FIND "${readme}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${README} does not quote ${EXPECTED} verbatim")
  endif()
endif()
