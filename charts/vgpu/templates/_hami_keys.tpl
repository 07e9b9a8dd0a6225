{{/* HAMi chart keys that vgpu does not implement as HAMi does (docs/install.md, "HAMi keys").
     Each one is either refused here (the install fails with what to do) when its value would
     change which GPUs or how much memory a container gets, or reported by NOTES.txt when vgpu
     runs differently but safely. HAMi's default values pass both quietly. Keys vgpu honours as
     HAMi does (createRuntimeClass, enableNumaTopology, -v) are not here. */}}

{{/* Fails the install for a HAMi key whose value vgpu cannot honour. */}}
{{- define "vgpu.hamiKeyChecks" -}}
{{- $dp := .Values.devicePlugin -}}
{{- $mig := toString ($dp.migStrategy | default "none") -}}
{{- if ne $mig "none" -}}
{{- fail (printf "devicePlugin.migStrategy %q: vgpu shares whole GPUs through libvgpu.so and does not hand out MIG instances; set it to none (or remove it), and leave MIG-partitioned GPUs to NVIDIA's device plugin on nodes without gpu=on" $mig) -}}
{{- end -}}
{{- $strategy := toString ($dp.deviceListStrategy | default "envvar") -}}
{{- if ne $strategy "envvar" -}}
{{- fail (printf "devicePlugin.deviceListStrategy %q: vgpu's device plugin names a container's GPUs in NVIDIA_VISIBLE_DEVICES only (envvar), for the NVIDIA container runtime; set it to envvar (or remove it) and make nvidia the nodes' default runtime or set devicePlugin.runtimeClassName" $strategy) -}}
{{- end -}}
{{- $pre := $dp.preConfiguredDeviceMemory | default 0 -}}
{{- if ne (toString $pre) "0" -}}
{{- fail (printf "devicePlugin.preConfiguredDeviceMemory %v: vgpu registers each GPU with the memory NVML reports and cannot set it by hand, so GPUs that report none (unified memory, e.g. GB10) are not supported; set it to 0 (or remove it)" $pre) -}}
{{- end -}}
{{- if and $dp.createRuntimeClass (not $dp.runtimeClassName) -}}
{{- fail "devicePlugin.createRuntimeClass is true but devicePlugin.runtimeClassName is empty: name the RuntimeClass to create (e.g. nvidia), or set createRuntimeClass: false" -}}
{{- end -}}
{{- range $what, $sc := dict "devicePlugin.securityContext" $dp.securityContext "devicePlugin.monitor.securityContext" $dp.monitor.securityContext -}}
{{- if and (kindIs "map" $sc) (hasKey $sc "allowPrivilegeEscalation") (not $sc.allowPrivilegeEscalation) (not $sc.privileged) -}}
{{- range ((($sc.capabilities | default dict).add) | default list) -}}
{{- if eq (upper (toString .)) "CAP_SYS_ADMIN" -}}
{{- fail (printf "%s: Kubernetes refuses allowPrivilegeEscalation: false together with capabilities.add CAP_SYS_ADMIN; drop one of them" $what) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* One "- <key>: <what happens>" line per HAMi key that vgpu honours differently; "" if none.
     NOTES.txt prints them after the install. */}}
{{- define "vgpu.hamiKeyWarnings" -}}
{{- $dp := .Values.devicePlugin -}}
{{- if $dp.enabled -}}
{{- if eq (toString $dp.passDeviceSpecsEnabled) "true" }}
- devicePlugin.passDeviceSpecsEnabled is not used: vgpu's device plugin passes no /dev/nvidia* device specs to kubelet; the NVIDIA container runtime adds the device nodes from NVIDIA_VISIBLE_DEVICES. NVIDIA's plugin passes them for kubelet's static CPU manager policy, under which a container can lose its GPUs when kubelet updates its cgroup; with vgpu that case is not covered, so keep the CPU manager policy none on GPU nodes or accept it. Remove the key (or set false) to silence this line.
{{- end }}
{{- range $key := list "nvidiaDriverRoot" "nvidiaHookPath" "gdrcopyEnabled" "gdsEnabled" "mofedEnabled" }}
{{- $v := index $dp $key }}
{{- if not (kindIs "invalid" $v) }}
- devicePlugin.{{ $key }} ({{ $v }}) is not used: vgpu's device plugin generates no CDI specs; containers get the driver from the NVIDIA container runtime (NVIDIA_VISIBLE_DEVICES). Remove the key (or set null).
{{- end }}
{{- end }}
{{- if ($dp.gpuOperatorToolkitReady | default dict).enabled }}
- devicePlugin.gpuOperatorToolkitReady.enabled: no init container waits for the GPU Operator's toolkit-ready file. The device plugin starts at once; until the toolkit is ready it cannot load NVML, exits, and kubelet restarts it until it can. Set enabled: false to silence this line.
{{- end }}
{{- if include "vgpu.escalationDropped" $dp.securityContext }}
- devicePlugin.securityContext: allowPrivilegeEscalation: false is left out because privileged is true (Kubernetes refuses both together; privileged implies escalation).
{{- end }}
{{- if and $dp.monitor.enabled (include "vgpu.escalationDropped" $dp.monitor.securityContext) }}
- devicePlugin.monitor.securityContext: allowPrivilegeEscalation: false (HAMi's default) is left out because privileged is true (the chart's default; Kubernetes refuses both together). The monitor reads other containers' processes (/proc/<pid>/maps), so it needs root with CAP_SYS_PTRACE: to run it unprivileged, set privileged: false and add SYS_PTRACE to capabilities.add.
{{- end }}
{{- range $a := $dp.extraArgs }}
{{- if include "vgpu.isDebugArg" (toString $a) }}
- devicePlugin.extraArgs: {{ $a }} is dropped (vgpu-device-plugin has no debug mode; -v=N sets how much it logs).
{{- end }}
{{- end }}
{{- end }}
{{- range $a := .Values.scheduler.extender.extraArgs }}
{{- if include "vgpu.isDebugArg" (toString $a) }}
- scheduler.extender.extraArgs: {{ $a }} is dropped (vgpu-scheduler has no debug mode; -v=N sets how much it logs).
{{- end }}
{{- end }}
{{- end -}}
