// Package scripts holds the shell scripts of `make run` and `make test`
// (install-deps.sh, run.sh, check-demo.sh); its Go tests check what they
// promise.
package scripts
