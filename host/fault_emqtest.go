//go:build emqtest

package host

/*
#include "shim.h"
*/
import "C"

// FaultWrite makes write n (from 1) of the next plan that has n writes
// fail, as a write the server refused would (host/apply.c's
// emq_fault_write), so a test can watch a plan stop part way. Test builds
// only.
func FaultWrite(n int) { C.emq_fault_write = C.int(n) }
