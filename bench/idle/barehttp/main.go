// Command barehttp is the idle baseline for strata-service: a Go HTTP server
// on loopback that serves nothing and waits.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr())
	http.Serve(ln, http.NotFoundHandler())
}
