package live

const exeSuffix = ".exe"
