// Command emq-module is built with -buildmode=c-shared into emq.so, the
// Valkey module. Its main never runs; loading the library installs the
// module's OnLoad.
package main

import (
	"github.com/echomq/emq/host"
	"github.com/echomq/emq/module"
)

func init() { host.Serve(module.Load) }

func main() {}
