// Command devserver starts a Temporal server for tests and local work: one
// process, listening on the loopback interface only, with its state in
// memory. It prints one JSON line with the address and namespace to use, then
// serves until it receives SIGINT or SIGTERM.
//
// It lives in a module of its own because the Temporal server pins
// versions of OpenTelemetry that the deepagents module cannot use.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.temporal.io/server/temporaltest"
)

// ready is the line printed once the server takes connections.
type ready struct {
	Address   string `json:"address"`
	Namespace string `json:"namespace"`
	PID       int    `json:"pid"`
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: devserver (no arguments): starts a loopback Temporal server and prints its address and namespace as one JSON line")
		os.Exit(2)
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)

	srv, err := start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "devserver:", err)
		os.Exit(1)
	}
	line, _ := json.Marshal(ready{Address: srv.GetFrontendHostPort(), Namespace: srv.GetDefaultNamespace(), PID: os.Getpid()})
	fmt.Println(string(line))

	<-stop
	shutdown(srv)
}

// shutdown stops the server; the test server reports an error in stopping
// through a testing.T it does not have here, which panics, so the panic is
// caught and reported.
func shutdown(srv *temporaltest.TestServer) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintln(os.Stderr, "devserver: stopping:", r)
		}
	}()
	srv.Stop()
}

// start starts the server; the test server panics rather than returning an
// error when it cannot start, so the panic is turned into one.
func start() (srv *temporaltest.TestServer, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the Temporal server did not start: %v", r)
		}
	}()
	return temporaltest.NewServer(), nil
}
