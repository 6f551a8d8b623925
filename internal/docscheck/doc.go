// Package docscheck holds the tests that keep the project's words true: every
// strata-service and strata-vision-relay command (and its flags) named in the
// docs, the README and the programs' messages exists; every test the docs cite
// exists; every repository path they cite exists. It has no code of its own:
// its tests read the tree from the module's root (found upward from the
// test's folder) and say what is wrong and where.
package docscheck
