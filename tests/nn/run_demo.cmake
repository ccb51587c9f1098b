# Runs `${DEMO} demo`; fails unless it exits 0 and prints the accuracy line.
execute_process(COMMAND ${DEMO} demo RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "tessera demo exited with ${rc}")
endif()
if(NOT out MATCHES "training accuracy: +[0-9.]+%")
  message(FATAL_ERROR "tessera demo printed no 'training accuracy: N%' line")
endif()
