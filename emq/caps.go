package emq

// Version is the module's semantic version, as EMQ.CAPS reports it.
const Version = "0.1.0"

// Caps replies the module's version and the capability tokens of the verbs
// this build serves:
//
//	EMQ.CAPS → version <Version> caps [<token> …]
func Caps(tokens []string) Verb {
	return func(c Call) error {
		s := c.Server
		s.ReplyArray(4)
		s.ReplyString("version")
		s.ReplyString(Version)
		s.ReplyString("caps")
		s.ReplyArray(len(tokens))
		for _, t := range tokens {
			s.ReplyString(t)
		}
		return nil
	}
}
