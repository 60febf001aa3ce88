package host

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Info adds the module's fields to an INFO reply.
type Info struct {
	ictx *C.ValkeyModuleInfoCtx
}

var infoFunc func(Info)

// OnInfo registers f to add the module's INFO fields. The server never
// calls it from a crash report.
func (m *Module) OnInfo(f func(Info)) error {
	if C.emq_register_info(m.ctx) != 0 {
		return fmt.Errorf("cannot register the INFO callback")
	}
	infoFunc = f
	return nil
}

//export emqInfo
func emqInfo(ictx *C.ValkeyModuleInfoCtx) {
	defer func() { _ = recover() }() // INFO must never take the server down
	if infoFunc != nil {
		infoFunc(Info{ictx: ictx})
	}
}

// Section starts a section; its fields show as <module>_<field>.
func (i Info) Section(name string) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	C.emq_info_section(i.ictx, cs)
}

// Int adds an integer field.
func (i Info) Int(field string, v int64) {
	cs := C.CString(field)
	defer C.free(unsafe.Pointer(cs))
	C.emq_info_int(i.ictx, cs, C.longlong(v))
}
