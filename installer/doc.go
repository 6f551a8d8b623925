// Package installer holds no Go code of its own: it is the Windows
// installer's folder (the NSIS script, build.sh, sign.sh, test-signing.sh and
// the licence text), and its test builds and inspects the installer.
// See docs/installer.md.
package installer
