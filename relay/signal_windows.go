package main

import "os"

func hangupSignal() os.Signal { return nil }
