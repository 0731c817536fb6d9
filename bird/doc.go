// Package bird is a client for the control socket of the BIRD routing
// daemon, BIRD 2 (2.0.8 and later) or BIRD 3, and a set of pure parsers for
// the replies rhi needs.
//
// The protocol is line based. The client sends one command per line; every
// reply line starts with a 4-digit code followed by '-' (the reply goes on)
// or ' ' (the last line of the reply), or with a single space (a further
// line with the previous code). Lines starting with '+' are asynchronous
// messages that may arrive at any time. Codes 8xxx and 9xxx are errors. On
// connect BIRD greets with code 0001.
//
// [Dial] opens a connection, checks the greeting and sends "restrict" so the
// connection can only read state: rhi never changes BIRD's configuration.
// [Conn.Exec] sends one command and reads its reply under the caller's
// context deadline, with bounded line and reply sizes. The parsers
// ([ParseProtocols], [ParseProtocolsAll], [ParseRoutes], [ParseExport],
// [ParsePaths], [ParseAnnouncers]) work on a [Reply] and do no I/O, so they
// are tested against captured transcripts of BIRD 2.0.12, 2.17.6 and 3.1.8.
// BIRD 3 prints a route's attributes under other names than BIRD 2
// ("bgp_path" for "BGP.as_path", a "source:" attribute for the "Type:"
// line); the parsers read both, and what they cannot read where rhi needs
// it is an error wrapping [ErrUnreadable], never an empty answer.
package bird
