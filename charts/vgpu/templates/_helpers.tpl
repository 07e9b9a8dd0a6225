{{/* Names. <fullname> is the release name, or <release>-vgpu when the release name lacks "vgpu". */}}
{{- define "vgpu.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "vgpu.namespace" -}}
{{- default .Release.Namespace .Values.namespaceOverride -}}
{{- end -}}

{{- define "vgpu.scheduler" -}}
{{- printf "%s-scheduler" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.devicePlugin" -}}
{{- printf "%s-device-plugin" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.monitor" -}}
{{- printf "%s-monitor" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.scheduler.tls" -}}
{{- printf "%s-scheduler-tls" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.scheduler.deviceConfig" -}}
{{- printf "%s-scheduler-device" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vgpu.webhook" -}}
{{- printf "%s-webhook" (include "vgpu.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels. Components keep HAMi's names (hami-scheduler, hami-device-plugin). */}}
{{- define "vgpu.selectorLabels" -}}
app.kubernetes.io/name: {{ include "vgpu.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "vgpu.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "vgpu.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Kubernetes minor version of the target cluster, as an integer ("20+" -> 20). */}}
{{- define "vgpu.kubeMinor" -}}
{{- regexReplaceAll "[^0-9]" (toString .Capabilities.KubeVersion.Minor) "" | int -}}
{{- end -}}

{{/* "true" when kube-scheduler's DefaultPreemption runs for the profile, else "false":
     scheduler.kubeScheduler.preemption, whose auto means from 1.22 on (docs/scheduler.md). */}}
{{- define "vgpu.kubeSchedulerPreemption" -}}
{{- $p := toString .Values.scheduler.kubeScheduler.preemption -}}
{{- if eq $p "auto" -}}{{ ge (include "vgpu.kubeMinor" . | int) 22 }}
{{- else -}}{{ $p }}
{{- end -}}
{{- end -}}

{{/* KubeSchedulerConfiguration API of the cluster's kube-scheduler:
     1.19-1.21 v1beta1, 1.22 v1beta2, 1.23-1.24 v1beta3, 1.25+ v1. */}}
{{- define "vgpu.schedulerConfigApi" -}}
{{- $minor := include "vgpu.kubeMinor" . | int -}}
{{- if ge $minor 25 -}}kubescheduler.config.k8s.io/v1
{{- else if ge $minor 23 -}}kubescheduler.config.k8s.io/v1beta3
{{- else if eq $minor 22 -}}kubescheduler.config.k8s.io/v1beta2
{{- else -}}kubescheduler.config.k8s.io/v1beta1
{{- end -}}
{{- end -}}

{{/* An image reference. dict: image (HAMi >= v2.7 map {registry, repository, tag}, or the plain
     repository string of HAMi <= v2.6), tag (fallback tag), root (the top context).
     global.imageRegistry replaces the registry. HAMi's own images are refused: the chart runs vgpu's
     binaries with vgpu's flags. vgpu's images (all but kube-scheduler's, allowHami) must name a
     registry host: a bare vgpu/scheduler is docker.io/vgpu/scheduler, a Docker Hub namespace
     this project does not own, so a node without the imported image would run whatever someone
     pushed there. */}}
{{- define "vgpu.image" -}}
{{- $img := .image -}}
{{- $registry := "" -}}
{{- $repository := "" -}}
{{- $tag := "" -}}
{{- if kindIs "string" $img -}}
{{- $repository = $img -}}
{{- else if kindIs "map" $img -}}
{{- $registry = $img.registry | default "" | toString -}}
{{- $repository = $img.repository | default "" | toString -}}
{{- $tag = $img.tag | default "" | toString -}}
{{- end -}}
{{- if not $repository -}}
{{- fail (printf "%s: no image repository" .what) -}}
{{- end -}}
{{- if and (not .allowHami) (regexMatch "(^|/)projecthami/" $repository) -}}
{{- fail (printf "%s is HAMi's image (%s): this chart runs vgpu's own images and flags; remove the override (docs/install.md, migrating from HAMi)" .what $repository) -}}
{{- end -}}
{{- with .root.Values.global -}}
{{- if .imageRegistry -}}
{{- $registry = .imageRegistry -}}
{{- end -}}
{{- end -}}
{{- if not $tag -}}
{{- $tag = .tag | default "" | toString -}}
{{- end -}}
{{- $ref := $repository -}}
{{- if and $registry (not (hasPrefix (printf "%s/" $registry) $repository)) -}}
{{- $ref = printf "%s/%s" $registry $repository -}}
{{- end -}}
{{- if and (not .allowHami) (not (regexMatch "^(localhost|[^/]*[.:][^/]*)/" $ref)) -}}
{{- fail (printf "%s: %s names no registry, so nodes would pull it from Docker Hub (docker.io/%s), whose vgpu/ namespace this project does not own. Set global.imageRegistry or %s.registry to the registry you pushed the images to, or to \"localhost\" (the default) for images imported with scripts/build-images.sh (docs/install.md, Images)" .what $ref $ref .what) -}}
{{- end -}}
{{- if contains "@" $ref -}}
{{- $ref -}}
{{- else if regexMatch ":[^/]+$" $ref -}}
{{- $ref -}}
{{- else -}}
{{- printf "%s:%s" $ref $tag -}}
{{- end -}}
{{- end -}}

{{/* Pull policy of an image: map's pullPolicy, else the legacy sibling key, else IfNotPresent. */}}
{{- define "vgpu.pullPolicy" -}}
{{- if and (kindIs "map" .image) .image.pullPolicy -}}
{{- .image.pullPolicy -}}
{{- else -}}
{{- .legacy | default "IfNotPresent" -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets: global.imagePullSecrets, HAMi's legacy top-level imagePullSecrets and the
     images' pullSecrets (names or {name: ...}). dict: root, images (list). */}}
{{- define "vgpu.pullSecrets" -}}
{{- $names := list -}}
{{- $sources := list .root.Values.global.imagePullSecrets .root.Values.imagePullSecrets -}}
{{- range .images -}}
{{- if kindIs "map" . -}}
{{- $sources = append $sources .pullSecrets -}}
{{- end -}}
{{- end -}}
{{- range $sources -}}
{{- range . -}}
{{- if kindIs "map" . -}}
{{- $names = append $names .name -}}
{{- else -}}
{{- $names = append $names (toString .) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $names = $names | uniq -}}
{{- if $names }}
imagePullSecrets:
{{- range $names }}
  - name: {{ . }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Images of each component. */}}
{{- define "vgpu.scheduler.image" -}}
{{- include "vgpu.image" (dict "image" .Values.scheduler.extender.image "tag" .Chart.AppVersion "root" . "what" "scheduler.extender.image") -}}
{{- end -}}

{{- define "vgpu.devicePlugin.image" -}}
{{- include "vgpu.image" (dict "image" .Values.devicePlugin.image "tag" .Chart.AppVersion "root" . "what" "devicePlugin.image") -}}
{{- end -}}

{{- define "vgpu.monitor.image" -}}
{{- $img := .Values.devicePlugin.monitor.image -}}
{{- if and (hasKey .Values.devicePlugin "monitorimage") (not (kindIs "map" $img)) -}}
{{- $img = .Values.devicePlugin.monitorimage -}}
{{- end -}}
{{- include "vgpu.image" (dict "image" $img "tag" .Chart.AppVersion "root" . "what" "devicePlugin.monitor.image") -}}
{{- end -}}

{{/* kube-scheduler: image.tag, else HAMi's legacy imageTag, else the cluster's v1.x.y. */}}
{{- define "vgpu.kubeScheduler.image" -}}
{{- $ks := .Values.scheduler.kubeScheduler -}}
{{- $clusterTag := regexReplaceAll "^(v[0-9]+\\.[0-9]+\\.[0-9]+).*$" .Capabilities.KubeVersion.Version "${1}" -}}
{{- $tag := $ks.imageTag | default $clusterTag -}}
{{- include "vgpu.image" (dict "image" $ks.image "tag" $tag "root" . "what" "scheduler.kubeScheduler.image" "allowHami" true) -}}
{{- end -}}

{{/* Extra arguments of vgpu-scheduler and vgpu-device-plugin, one "- arg" line each, as written:
     every vgpu daemon reads Go's spellings such as HAMi's -v=4 (core/base/daemon_flags.h).
     --debug (HAMi's scheduler only) is dropped: no vgpu binary has it and each would refuse the
     unknown flag; NOTES.txt says so (vgpu.hamiKeyWarnings). */}}
{{- define "vgpu.extraArgs" -}}
{{- range . }}
{{- $a := toString . }}
{{- if not (include "vgpu.isDebugArg" $a) }}
- {{ $a | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* "true" when the argument is HAMi's --debug (any spelling), else "". */}}
{{- define "vgpu.isDebugArg" -}}
{{- if or (eq . "--debug") (eq . "-debug") (hasPrefix "--debug=" .) (hasPrefix "-debug=" .) -}}true{{- end -}}
{{- end -}}

{{/* A container's securityContext block from its values map. Kubernetes refuses privileged: true
     together with allowPrivilegeEscalation: false. A HAMi values file sets the latter for the
     monitor and Helm merges it with the chart's privileged: true, so the install failed: privileged
     wins (it implies escalation) and allowPrivilegeEscalation is left out; NOTES.txt says so. */}}
{{- define "vgpu.securityContext" -}}
{{- $sc := deepCopy (. | default dict) -}}
{{- if include "vgpu.escalationDropped" $sc -}}
{{- $_ := unset $sc "allowPrivilegeEscalation" -}}
{{- end -}}
{{- with $sc }}
securityContext:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* "true" when vgpu.securityContext leaves allowPrivilegeEscalation out of this map, else "". */}}
{{- define "vgpu.escalationDropped" -}}
{{- if and (kindIs "map" .) .privileged (hasKey . "allowPrivilegeEscalation") (not .allowPrivilegeEscalation) -}}true{{- end -}}
{{- end -}}

{{/* env entries from a list (kept as is) or a name: value map. */}}
{{- define "vgpu.extraEnvs" -}}
{{- if kindIs "slice" . }}
{{- range . }}
- {{ toYaml . | nindent 2 | trim }}
{{- end }}
{{- else if kindIs "map" . }}
{{- range $k, $v := . }}
- name: {{ $k }}
  value: {{ toString $v | quote }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The device plugin's node selector: nvidiaNodeSelector, or HAMi <= v2.6's nvidianodeSelector. */}}
{{- define "vgpu.nodeSelector" -}}
{{- $sel := .Values.devicePlugin.nvidiaNodeSelector -}}
{{- if hasKey .Values.devicePlugin "nvidianodeSelector" -}}
{{- $sel = .Values.devicePlugin.nvidianodeSelector -}}
{{- end -}}
{{- with $sel }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The monitor's containers directory: monitor.ctrPath, or HAMi <= v2.6's monitorctrPath. */}}
{{- define "vgpu.monitor.ctrPath" -}}
{{- $p := .Values.devicePlugin.monitor.ctrPath -}}
{{- if .Values.devicePlugin.monitorctrPath -}}
{{- $p = .Values.devicePlugin.monitorctrPath -}}
{{- end -}}
{{- trimSuffix "/" $p -}}
{{- end -}}

{{/* <gpuHookPath>/vgpu without a doubled slash. */}}
{{- define "vgpu.hookDir" -}}
{{- printf "%s/vgpu" (trimSuffix "/" .Values.global.gpuHookPath) -}}
{{- end -}}

{{/* Node lock expiry in seconds from a Go duration (90s, 5m, 1h, 1h30m) or a plain number; "" if unset. */}}
{{- define "vgpu.nodeLockExpirySeconds" -}}
{{- $v := toString (.Values.scheduler.nodeLockExpire | default "") | trim -}}
{{- if $v -}}
{{- if regexMatch "^[0-9]+$" $v -}}
{{- $v -}}
{{- else if regexMatch "^([0-9]+h)?([0-9]+m)?([0-9]+s)?$" $v -}}
{{- $h := regexFind "[0-9]+h" $v | trimSuffix "h" | default "0" | int -}}
{{- $m := regexFind "[0-9]+m" $v | trimSuffix "m" | default "0" | int -}}
{{- $s := regexFind "[0-9]+s" $v | trimSuffix "s" | default "0" | int -}}
{{- add (mul $h 3600) (mul $m 60) $s -}}
{{- else -}}
{{- fail (printf "scheduler.nodeLockExpire %q: want a Go duration of h/m/s (30s, 5m, 1h30m) or seconds" $v) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Resources kube-scheduler leaves to the extender (managedResources, ignoredByScheduler). */}}
{{- define "vgpu.managedResources" -}}
{{- range (list .Values.resourceName .Values.resourceMem .Values.resourceCores .Values.resourceMemPercentage .Values.resourcePriority) }}
- name: {{ . | quote }}
  ignoredByScheduler: true
{{- end }}
{{- end -}}

{{/* The scheduler's device-config.yaml (section nvidia:, hami-compat §8). */}}
{{- define "vgpu.deviceConfig" -}}
{{- $content := "" -}}
{{- with index .Values "device-config" -}}
{{- $content = .content | default "" -}}
{{- end -}}
{{- if $content -}}
{{- $content -}}
{{- else -}}
nvidia:
  resourceCountName: {{ .Values.resourceName | quote }}
  resourceMemoryName: {{ .Values.resourceMem | quote }}
  resourceMemoryPercentageName: {{ .Values.resourceMemPercentage | quote }}
  resourceCoreName: {{ .Values.resourceCores | quote }}
  resourcePriorityName: {{ .Values.resourcePriority | quote }}
  defaultMemory: {{ .Values.scheduler.defaultMem | default 0 | int64 }}
  defaultCores: {{ .Values.scheduler.defaultCores | default 0 | int64 }}
  defaultGPUNum: {{ .Values.scheduler.defaultGPUNum | default 1 | int64 }}
  deviceSplitCount: {{ .Values.devicePlugin.deviceSplitCount | int64 }}
  deviceMemoryScaling: {{ .Values.devicePlugin.deviceMemoryScaling }}
  deviceCoreScaling: {{ .Values.devicePlugin.deviceCoreScaling }}
  disableCoreLimit: {{ eq (toString .Values.devicePlugin.disablecorelimit) "true" }}
  gpuCorePolicy: {{ .Values.devices.nvidia.gpuCorePolicy | quote }}
{{- /* HAMi's key, written where HAMi's chart writes it; unset keeps vgpu's default (on). */}}
{{- with .Values.devicePlugin.enableNumaTopology | toString }}
{{- if ne . "<nil>" }}
  enableNumaTopology: {{ eq . "true" }}
{{- end }}
{{- end }}
{{- end -}}
{{- end -}}

{{/* Checks of the values; included once by templates/validate.yaml. */}}
{{- define "vgpu.validate" -}}
{{- $minor := include "vgpu.kubeMinor" . | int -}}
{{- if lt $minor 19 -}}
{{- fail (printf "Kubernetes %s: the chart needs 1.19 or later (a kube-scheduler that reads KubeSchedulerConfiguration extenders)" .Capabilities.KubeVersion.Version) -}}
{{- end -}}
{{- $np := .Values.scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy -}}
{{- if not (has $np (list "binpack" "spread")) -}}
{{- fail (printf "scheduler.defaultSchedulerPolicy.nodeSchedulerPolicy %q: want binpack or spread" $np) -}}
{{- end -}}
{{- /* A GPU policy is a comma-separated list of words, as hami.io/gpu-scheduler-policy
     (docs/scheduler.md); the scheduler's --gpu-scheduler-policy refuses the same values. */ -}}
{{- $gp := .Values.scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy | toString -}}
{{- $gpWords := list -}}
{{- range splitList "," $gp -}}
{{- $w := trim . | lower -}}
{{- if $w -}}
{{- if not (has $w (list "binpack" "spread" "topology-aware" "mutex" "numa")) -}}
{{- fail (printf "scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy %q: unknown word %q; want binpack or spread, numa, topology-aware, mutex, comma-separated" $gp $w) -}}
{{- end -}}
{{- $gpWords = append $gpWords $w -}}
{{- end -}}
{{- end -}}
{{- if empty $gpWords -}}
{{- fail "scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy is empty: want binpack, spread, topology-aware, mutex, numa or a comma-separated list of them" -}}
{{- end -}}
{{- if and (has "binpack" $gpWords) (has "spread" $gpWords) -}}
{{- fail (printf "scheduler.defaultSchedulerPolicy.gpuSchedulerPolicy %q: binpack and spread rank GPUs in opposite orders; pick one" $gp) -}}
{{- end -}}
{{- $cp := .Values.devices.nvidia.gpuCorePolicy -}}
{{- if not (has $cp (list "default" "force" "disable")) -}}
{{- fail (printf "devices.nvidia.gpuCorePolicy %q: want default, force or disable" $cp) -}}
{{- end -}}
{{- $wm := .Values.scheduler.admissionWebhook.mode | default "enforce" -}}
{{- if not (has $wm (list "enforce" "audit")) -}}
{{- fail (printf "scheduler.admissionWebhook.mode %q: want enforce or audit" $wm) -}}
{{- end -}}
{{- if not (has .Values.devicePlugin.inventoryFormat (list "json" "legacy")) -}}
{{- fail (printf "devicePlugin.inventoryFormat %q: want json or legacy" .Values.devicePlugin.inventoryFormat) -}}
{{- end -}}
{{- if not (has (toString .Values.scheduler.kubeScheduler.preemption) (list "auto" "true" "false")) -}}
{{- fail (printf "scheduler.kubeScheduler.preemption %q: want auto, true or false" (toString .Values.scheduler.kubeScheduler.preemption)) -}}
{{- end -}}
{{- if and (gt (int .Values.scheduler.replicas) 1) (not .Values.scheduler.leaderElect) -}}
{{- fail "scheduler.replicas > 1 needs scheduler.leaderElect: true (only the elected vgpu-scheduler binds; without leader election two replicas would place pods on the same GPUs)" -}}
{{- end -}}
{{- $mps := .Values.devicePlugin.mps | default dict -}}
{{- if and $mps.enabled (not (hasPrefix "/" (toString $mps.hostDir))) -}}
{{- fail (printf "devicePlugin.mps.hostDir %q: want an absolute host path" (toString $mps.hostDir)) -}}
{{- end -}}
{{- if and (not $mps.enabled) (regexMatch "\"operatingmode\"\\s*:\\s*\"mps\"" (toString .Values.devicePlugin.nodeConfiguration.config)) -}}
{{- fail "devicePlugin.nodeConfiguration puts a node in \"operatingmode\": \"mps\" but devicePlugin.mps.enabled is false: set devicePlugin.mps.enabled=true (with perNode=true to keep the other nodes hami-core), or the daemons' directories would not reach the pods" -}}
{{- end -}}
{{- $hook := include "vgpu.hookDir" . -}}
{{- if ne (trimSuffix "/" .Values.devicePlugin.libPath) $hook -}}
{{- fail (printf "devicePlugin.libPath %q must be <global.gpuHookPath>/vgpu (%q): the device plugin hands kubelet host paths equal to the paths it sees" .Values.devicePlugin.libPath $hook) -}}
{{- end -}}
{{- $ctr := include "vgpu.monitor.ctrPath" . -}}
{{- if and .Values.devicePlugin.monitor.enabled (ne $ctr (printf "%s/containers" $hook)) -}}
{{- fail (printf "devicePlugin.monitor.ctrPath %q must be <global.gpuHookPath>/vgpu/containers (%q), where the device plugin creates the containers' regions" $ctr (printf "%s/containers" $hook)) -}}
{{- end -}}
{{- if and .Values.scheduler.admissionWebhook.enabled (not .Values.scheduler.certManager.enabled) (not .Values.scheduler.patch.enabled) (not .Values.scheduler.admissionWebhook.caBundle) -}}
{{- fail "scheduler.patch.enabled and scheduler.certManager.enabled are both false: give scheduler.admissionWebhook.caBundle (base64 PEM) of the certificate in Secret <fullname>-scheduler-tls" -}}
{{- end -}}
{{- $nc := .Values.devicePlugin.nodeConfiguration -}}
{{- if and .Values.devicePlugin.enabled (not $nc.externalConfigName) -}}
{{- $parsed := $nc.config | default "{}" | fromJson -}}
{{- if hasKey $parsed "Error" -}}
{{- fail (printf "devicePlugin.nodeConfiguration.config is not valid JSON: %s" $parsed.Error) -}}
{{- end -}}
{{- end -}}
{{- $_ := include "vgpu.hamiKeyChecks" . -}}
{{- $_ := include "vgpu.nodeLockExpirySeconds" . -}}
{{- $_ := include "vgpu.scheduler.image" . -}}
{{- $_ := include "vgpu.devicePlugin.image" . -}}
{{- $_ := include "vgpu.monitor.image" . -}}
{{- end -}}
