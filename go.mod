module github.com/rhi-daemon/rhi

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/sirupsen/logrus v1.10.2
	github.com/vishvananda/netlink v1.3.1
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/vishvananda/netns v0.0.5 // indirect
	golang.org/x/sys v0.13.0 // indirect
)
