package emq

// Caps is EMQ.CAPS, which reports the module's version and the capability
// tokens of the verbs this build serves:
//
//	EMQ.CAPS → version <Version> caps [<token> …]
func Caps(tokens []string) *Verb {
	return &Verb{Name: "EMQ.CAPS", Arity: 1, Run: func(c Call) error {
		p := c.Plan
		p.reply(ReplyArray, 0, 4)
		p.reply(ReplyBulk, refVersion, 0)
		p.reply(ReplyBulk, p.String(Version), 0)
		p.reply(ReplyBulk, refCaps, 0)
		p.reply(ReplyArray, 0, int64(len(tokens)))
		for _, t := range tokens {
			p.reply(ReplyBulk, p.String(t), 0)
		}
		return c.Server.Apply(p)
	}}
}
