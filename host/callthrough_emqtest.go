//go:build emqtest

package host

/*
#include "api.h"

// emq_call_through runs argv[1..] as another module would with RM_Call and
// no "C" flag — on a client without a user — and replies what it replied.
static void emq_call_through(emq_call *c) {
    const char *name = api.StringPtrLen(c->argv[1], NULL);
    ValkeyModuleCallReply *r = api.Call(c->ctx, name, "Ev", c->argv + 2, (size_t)(c->argc - 2));
    if (r) {
        api.ReplyWithCallReply(c->ctx, r);
        api.FreeCallReply(r);
    } else {
        api.ReplyWithError(c->ctx, "ERR emq: RM_Call failed");
    }
    c->replied = 1;
}
*/
import "C"

// CallThrough runs the call's arguments after the first as a command through
// the module API's Call, as another module would without running it as the
// caller's user (no "C" flag), and replies its reply. Test builds only.
func (c *Call) CallThrough() { C.emq_call_through((*C.emq_call)(c)) }
