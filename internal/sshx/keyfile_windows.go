package sshx

// oNonblock: Windows has no FIFOs in the file system; a plain open.
const oNonblock = 0
