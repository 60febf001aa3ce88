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

// NumericConfig is a module config, emq.<name> in CONFIG GET/SET and
// valkey.conf. Its value lives in C, where the server's setter writes it.
type NumericConfig struct {
	slot C.int
}

var nconfigs int

// NumericConfig registers the config name with its default and bounds.
// Call LoadConfigs once every config is registered.
func (m *Module) NumericConfig(name string, def, min, max int64) (NumericConfig, error) {
	slot := C.int(nconfigs)
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.emq_numeric_config(m.ctx, slot, cname, C.longlong(def), C.longlong(min), C.longlong(max)) != 0 {
		return NumericConfig{}, fmt.Errorf("cannot register config %s", name)
	}
	nconfigs++
	return NumericConfig{slot: slot}, nil
}

// LoadConfigs applies the values valkey.conf gives the module's configs.
func (m *Module) LoadConfigs() error {
	if C.emq_load_configs(m.ctx) != 0 {
		return fmt.Errorf("cannot load the module's configs")
	}
	return nil
}

// Value returns the config's current value.
func (c NumericConfig) Value() int64 { return int64(C.emq_config_values[c.slot]) }
