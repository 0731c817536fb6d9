# check-yaml.rb RHI_YAML APISIX_CONFIG APISIX_YAML VIPS UPSTREAMS: run by
# check.sh. Parses the lab's YAML files with a real YAML parser and checks
# them against each other:
#   - lab.sh reads deploy/rhi.yaml line by line; its VIPs and upstream ids
#     (VIPS and UPSTREAMS, space-separated) must be what the YAML really says;
#   - APISIX's config.yaml: standalone (data_plane + yaml), control API on the
#     address rhi polls (apisix_control_url);
#   - the rendered apisix.yaml: ends in #END, one upstream per rhi upstream
#     key with two or more nodes and active checks, one route per upstream.
require "yaml"
require "uri"

rhi_path, config_path, routes_path, vips_arg, upstreams_arg = ARGV
abort "usage: check-yaml.rb RHI_YAML APISIX_CONFIG APISIX_YAML VIPS UPSTREAMS" unless upstreams_arg

def fail!(path, msg)
  abort "#{path}: #{msg}"
end

rhi = YAML.safe_load(File.read(rhi_path))
vips = rhi.fetch("vips").map { |v| v.fetch("address").to_s.sub(%r{/\d+\z}, "") }
fail!(rhi_path, "lab.sh read VIPs #{vips_arg.inspect}, the YAML has #{vips.join(' ').inspect}") unless vips.join(" ") == vips_arg
ids = rhi.fetch("vips").flat_map { |v| v.fetch("upstreams") }.map { |k| k.split("/").last }.uniq
fail!(rhi_path, "lab.sh read upstreams #{upstreams_arg.inspect}, the YAML has #{ids.join(' ').inspect}") unless ids.join(" ") == upstreams_arg

config = YAML.safe_load(File.read(config_path))
fail!(config_path, "deployment.role is not data_plane") unless config.dig("deployment", "role") == "data_plane"
unless config.dig("deployment", "role_data_plane", "config_provider") == "yaml"
  fail!(config_path, "deployment.role_data_plane.config_provider is not yaml")
end
fail!(config_path, "apisix.enable_control is not true") unless config.dig("apisix", "enable_control") == true
control = URI(rhi.fetch("apisix_control_url", "http://127.0.0.1:9090"))
got = [config.dig("apisix", "control", "ip"), config.dig("apisix", "control", "port")]
unless got == [control.host, control.port]
  fail!(config_path, "control API on #{got.join(':')}, rhi polls #{control.host}:#{control.port}")
end

text = File.read(routes_path)
fail!(routes_path, "does not end in #END (APISIX would not load it)") unless text.lines.last&.chomp == "#END"
routes = YAML.safe_load(text)
upstreams = routes.fetch("upstreams")
fail!(routes_path, "upstream ids #{upstreams.map { |u| u['id'] }.inspect}, want #{ids.inspect}") unless upstreams.map { |u| u["id"] } == ids
upstreams.each do |u|
  fail!(routes_path, "upstream #{u['id']}: fewer than 2 nodes") unless u.fetch("nodes").size >= 2
  fail!(routes_path, "upstream #{u['id']}: no checks.active.http_path") unless u.dig("checks", "active", "http_path")
end
route_ups = routes.fetch("routes").map { |r| r.fetch("upstream_id") }
fail!(routes_path, "routes go to #{route_ups.inspect}, want one per upstream #{ids.inspect}") unless route_ups == ids

puts "check-yaml: #{rhi_path}, #{config_path}, #{routes_path} ok"
