"""labkit's tests, one folder per labkit subpackage. A package, so that files in different folders
get distinct module names and can import the shared message builders from ``tests.conftest``."""
