# abi_op_catalogue_test: the op catalogue (op names and schemas) only grows.
# Every released catalogue is committed as op_catalogue_v<N>.txt and never
# edited; the test fails, naming the op and the difference, when the live
# dispatcher removes an op of any of them or changes a schema other than by
# appending arguments with defaults, and when it declares ops or arguments the
# newest file does not record. `abi_op_catalogue_test --write` is the accept
# step (docs/abi.md §6, "The op catalogue").
tessera_add_gtest(abi_op_catalogue_test SOURCES op_catalogue_test.cpp LIBS tessera::tessera)
target_compile_definitions(abi_op_catalogue_test PRIVATE TSRTEST_OP_CATALOGUE_DIR="${CMAKE_CURRENT_SOURCE_DIR}")
