// Package verify asks BIRD whether it agrees with what rhi wants announced:
// for each VIP, whether the address is on the interface, whether BIRD's
// table holds it from a direct protocol, and whether each selected BGP
// protocol exports it. The daemon runs it after changes and on a timer
// (package confirm); `rhi verify` runs it on demand and prints the report
// (router.Report: the words of the check live in package router).
//
// What `rhi verify` holds BIRD to comes from package expect.
//
// Check only reads: it never changes the interface or BIRD, and what BIRD
// says never changes what rhi wants.
package verify
