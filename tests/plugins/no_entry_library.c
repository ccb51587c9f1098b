/* A valid shared library that is not a Tessera plugin: no entry symbol. */
int tsrtest_some_function(int x) { return x + 1; }
