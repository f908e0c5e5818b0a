"""Check the Kubernetes manifests (``deploy/k8s``) without a cluster.

    python -m tools.k8s_validate [TREE ...] [-k VERSION ...] [--renderer NAME]

TREE (default ``deploy/k8s``) is a folder; every ``*.yaml`` and ``*.yml`` under it is read,
and every document in them is checked:

- Kubernetes' own kinds with kubernetes-validate, strict (an unknown field is an error),
  against each VERSION's schemas (default: 1.37, the newest the pinned
  kubernetes-validate has, and 1.33, which clusters on a provider's extended support
  still run: what passes both uses no field one of them lacks);
- KEDA's kinds (``keda.sh``) with jsonschema against the ``openAPIV3Schema`` of KEDA's
  CRDs vendored in ``tools/k8s_schemas/keda`` (README there: the release), made strict
  the way ``kubectl apply`` (field validation Strict) is: an unknown field is an error;
  their metadata as Kubernetes' ObjectMeta;
- any other kind is an error: nothing here may go unchecked.

Each folder with a ``kustomization.yaml`` is a kustomization: everything it lists must
exist, every YAML file beside it must be listed (or be named ``*.example.yaml``), and it
is rendered (``kustomize build``, else ``kubectl kustomize``, else a small built-in
renderer: resources, namespace, images and generators only, bounded) and the result
checked as above, and cross-checked: the ConfigMaps, Secrets (the keys of a
``*.example.yaml`` Secret), Services, volumes and ports that pods, Services, Ingresses,
PodDisruptionBudgets and KEDA objects name exist. A generator input made at deploy time
(``zygote-seccomp.json``: the grading nodes' engine's profile) is replaced by a stand-in
when absent, and checked as a zygote profile when present.

Exit status: 0 all valid; 1 a document does not validate (one ``ERROR`` line each);
2 bad input (no such folder, a version without schemas, a renderer not installed), with
one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml
from kubernetes_validate import utils as kv_utils

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TREE = ROOT / "deploy" / "k8s"
CRD_DIR = Path(__file__).resolve().parent / "k8s_schemas"
DEFAULT_VERSIONS = ("1.33", "1.37")

MAX_FILES = 500  # YAML files read per tree
MAX_BYTES = 1 << 20  # per file
MAX_DEPTH = 8  # nested kustomizations the built-in renderer follows
RENDER_TIMEOUT = 120.0

KUSTOMIZE_GROUP = "kustomize.config.k8s.io"
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# What the built-in renderer applies; a kustomization that uses anything else needs
# kustomize or kubectl (the result would silently differ otherwise).
BUILTIN_FIELDS = {"apiVersion", "kind", "namespace", "resources", "images",
                  "configMapGenerator", "secretGenerator", "generatorOptions"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PersistentVolume", "StorageClass", "IngressClass", "PriorityClass",
                  "RuntimeClass", "ClusterTriggerAuthentication"}
POD_TEMPLATE_KINDS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}


def _standin_seccomp() -> str:
    from judge.sandbox.seccomp import zygote_profile

    return json.dumps(zygote_profile({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": []}))


def _check_seccomp(path: Path) -> str | None:
    from judge.errors import SandboxUnavailable
    from judge.sandbox.seccomp import load

    try:
        load(path)
    except SandboxUnavailable as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class DeployTimeInput:
    """A generator input made where the service is deployed, not kept in the repository."""

    made_by: str
    standin: Callable[[], str]
    check: Callable[[Path], str | None]


DEPLOY_TIME_INPUTS = {
    "zygote-seccomp.json": DeployTimeInput(
        "copy var/zygote-seccomp.json from a host with the grading nodes' engine",
        _standin_seccomp, _check_seccomp),
}


class BadInput(Exception):
    """Exit 2: the command line or the tree cannot be checked at all."""


@dataclass
class Report:
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    documents: int = 0
    rendered: int = 0

    def error(self, where: str, message: str) -> None:
        self.errors.append(f"ERROR {where}: {message}")


# -- reading ---------------------------------------------------------------------------


def yaml_files(tree: Path) -> list[Path]:
    found = []
    for path in tree.rglob("*"):
        if path.suffix in (".yaml", ".yml") and path.is_file():
            found.append(path)
            if len(found) > MAX_FILES:
                raise BadInput(f"{tree}: more than {MAX_FILES} YAML files")
    return sorted(found)


def load_documents(path: Path) -> list[Any]:
    """The non-empty documents of a YAML file; raises ValueError with a short reason."""
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError(f"larger than {MAX_BYTES} bytes")
        return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except OSError as exc:
        raise ValueError(f"{path.name}: cannot be read ({exc.strerror})") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"not YAML: {' '.join(str(exc).split())[:200]}") from None


def kind_name(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "?"
    meta: dict[str, Any] = doc["metadata"] if isinstance(doc.get("metadata"), dict) else {}
    return f"{doc.get('kind', '?')}/{meta.get('name', '?')}"


# -- schemas ---------------------------------------------------------------------------


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` wherever it lists properties and
    says nothing of others (the API server's strict field validation)."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _strict(v) for k, v in schema.items()}
    if ("properties" in out and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def crd_schemas(folder: Path = CRD_DIR) -> dict[tuple[str, str], dict[str, Any]]:
    """``(apiVersion, kind)`` -> the served version's strict ``openAPIV3Schema``, from
    every CustomResourceDefinition under ``folder``."""
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(folder.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for version in spec["versions"]:
                if version.get("served"):
                    key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                    schemas[key] = _strict(version["schema"]["openAPIV3Schema"])
    return schemas


def _path(parts: Any) -> str:
    return ".".join(str(p) for p in parts) or "(top)"


def validate_document(doc: Any, versions: tuple[str, ...],
                      crds: dict[tuple[str, str], dict[str, Any]]) -> list[str]:
    """What is wrong with one manifest document, as messages (none: valid)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("apiVersion"), str) \
            or not isinstance(doc.get("kind"), str):
        return ["not a Kubernetes object (no apiVersion and kind)"]
    if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
        return ["no metadata.name"]
    api_version, kind = doc["apiVersion"], doc["kind"]
    if (api_version, kind) in crds:
        found = []
        validator = jsonschema.Draft7Validator(crds[api_version, kind])
        for err in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.path))):
            found.append(f"{_path(err.path)}: {err.message} (CRD schema)")
        # The CRD says only "type: object" of metadata; the API server checks ObjectMeta.
        wrapper = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": doc["metadata"]}
        found += [m for m in _kubernetes(wrapper, versions)]
        return found
    if api_version.split("/")[0] in {g.split("/")[0] for g, _ in crds}:
        return [f"unknown kind {kind} of {api_version} (no vendored CRD has it)"]
    return _kubernetes(doc, versions)


def _kubernetes(doc: dict[str, Any], versions: tuple[str, ...]) -> list[str]:
    by_message: dict[str, list[str]] = {}
    for version in versions:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kv_utils.ValidationError as exc:
            message = f"{_path(exc.path)}: {exc.message}"
            by_message.setdefault(message, []).append(version)
        except kv_utils.SchemaNotFoundError:
            message = (f"unknown kind {doc['kind']} of {doc['apiVersion']} "
                       "(no schema: a typo, or a custom resource without a vendored CRD)")
            by_message.setdefault(message, []).append(version)
    return [f"{m} (Kubernetes {', '.join(v)})" for m, v in by_message.items()]


def check_versions(versions: tuple[str, ...]) -> None:
    known = {kv_utils.major_minor(v) for v in kv_utils.all_versions()}
    for version in versions:
        if kv_utils.major_minor(version.lstrip("v")) not in known:
            raise BadInput(f"kubernetes-validate {kv_utils.__version__} has no schemas for "
                           f"Kubernetes {version} (it has {min(known)} to {max(known)})")


# -- kustomizations --------------------------------------------------------------------


def kustomization_file(folder: Path) -> Path | None:
    for name in KUSTOMIZATION_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def _generator_files(entry: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """``(key, relative path)`` of a generator's ``files`` (``key=path`` or ``path``)."""
    for item in entry.get("files") or []:
        key, _, rel = str(item).rpartition("=")
        yield (key or Path(rel).name), rel


def check_kustomization(kfile: Path, tree: Path, report: Report) -> list[str]:
    """Everything the kustomization lists exists, and every YAML file beside it is listed;
    returns the deploy-time inputs it needs and are absent."""
    where = str(kfile.relative_to(tree.parent))
    folder = kfile.parent
    try:
        (spec,) = load_documents(kfile)
    except ValueError as exc:
        report.error(where, str(exc))
        return []
    if not isinstance(spec, dict) or spec.get("kind") not in ("Kustomization", "Component"):
        report.error(where, "not a Kustomization")
        return []
    listed: set[Path] = set()
    for rel in spec.get("resources") or []:
        target = (folder / str(rel)).resolve()
        if target.is_file():
            listed.add(target)
        elif not (target.is_dir() and kustomization_file(target)):
            report.error(where, f"resource {rel}: no such file or kustomization")
    missing_inputs = []
    for gen in (spec.get("configMapGenerator") or []) + (spec.get("secretGenerator") or []):
        for _, rel in _generator_files(gen):
            path = folder / rel
            made = DEPLOY_TIME_INPUTS.get(Path(rel).name)
            if path.is_file():
                if made is not None and (problem := made.check(path)):
                    report.error(str(path.relative_to(tree.parent)), problem)
            elif made is not None:
                missing_inputs.append(rel)
                report.notes.append(f"{rel} is made at deploy time ({made.made_by}); "
                                    "rendered with a stand-in")
            else:
                report.error(where, f"{gen.get('name')}: file {rel}: no such file")
    for path in sorted(folder.iterdir()):
        if path.suffix in (".yaml", ".yml") and path != kfile and path.resolve() not in listed \
                and not path.name.endswith((".example.yaml", ".example.yml")):
            report.error(str(path.relative_to(tree.parent)),
                         f"not among {kfile.name}'s resources: nothing would apply it")
    return missing_inputs


def renderer_command(name: str) -> list[str] | None:
    if name in ("auto", "kustomize") and shutil.which("kustomize"):
        return ["kustomize", "build"]
    if name in ("auto", "kubectl") and shutil.which("kubectl"):
        return ["kubectl", "kustomize"]
    if name in ("kustomize", "kubectl"):
        raise BadInput(f"--renderer {name}: {name} is not installed")
    return None


def render(folder: Path, tree: Path, renderer: str, standins: list[str]) -> tuple[list[Any], str]:
    """The kustomization in ``folder`` rendered, in a copy of ``tree`` where each absent
    deploy-time input has its stand-in; returns the documents and who rendered them."""
    with tempfile.TemporaryDirectory(prefix="k8s-validate-") as tmp:
        copy = Path(tmp) / tree.name
        shutil.copytree(tree, copy, symlinks=True)
        target = copy / folder.relative_to(tree)
        for rel in standins:
            made = DEPLOY_TIME_INPUTS[Path(rel).name]
            (target / rel).write_text(made.standin())
        command = renderer_command(renderer)
        if command is None:
            return builtin_render(target, copy, 0), "built-in renderer"
        try:
            done = subprocess.run([*command, str(target)], capture_output=True, text=True,
                                  timeout=RENDER_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise ValueError(f"{' '.join(command)} took over {RENDER_TIMEOUT:g} s") from None
        if done.returncode != 0:
            reason = " ".join(done.stderr.replace(tmp, "").split())[:300]
            raise ValueError(f"{' '.join(command)} failed: {reason}")
        return [d for d in yaml.safe_load_all(done.stdout) if d is not None], " ".join(command)


def builtin_render(folder: Path, root: Path, depth: int) -> list[Any]:
    """kustomize's result for the fields in BUILTIN_FIELDS (generated names get no hash
    suffix); a kustomization with any other field is refused, not half-rendered."""
    if depth > MAX_DEPTH:
        raise ValueError(f"kustomizations nested deeper than {MAX_DEPTH}")
    kfile = kustomization_file(folder)
    if kfile is None:
        raise ValueError(f"{folder.relative_to(root)}: no kustomization")
    spec = (load_documents(kfile) or [None])[0]
    if not isinstance(spec, dict):
        raise ValueError(f"{kfile.relative_to(root)}: not a kustomization")
    unsupported = sorted(set(spec) - BUILTIN_FIELDS)
    if unsupported:
        raise ValueError(f"the built-in renderer does not apply {', '.join(unsupported)}: "
                         "install kustomize or kubectl")
    docs: list[Any] = []
    for rel in spec.get("resources") or []:
        target = (folder / str(rel)).resolve()
        if not target.is_relative_to(root.resolve()):
            raise ValueError(f"resource {rel} is outside {root.name}")
        docs += builtin_render(target, root, depth + 1) if target.is_dir() \
            else load_documents(target)
    for kind, key in (("ConfigMap", "configMapGenerator"), ("Secret", "secretGenerator")):
        for gen in spec.get(key) or []:
            data = {}
            for key_name, rel in _generator_files(gen):
                source = (folder / rel).resolve()
                if not source.is_relative_to(folder.resolve()):
                    raise ValueError(f"{gen.get('name')}: {rel} is outside its kustomization")
                try:
                    data[key_name] = source.read_text()
                except (OSError, UnicodeDecodeError) as exc:
                    raise ValueError(f"{gen.get('name')}: {rel} cannot be read ({exc})") from None
            for literal in gen.get("literals") or []:
                name, _, value = str(literal).partition("=")
                data[name] = value
            made: dict[str, Any] = {"apiVersion": "v1", "kind": kind,
                                    "metadata": {"name": gen["name"]}, "data": data}
            if kind == "Secret":
                made["stringData"] = made.pop("data")
                made["type"] = gen.get("type", "Opaque")
            docs.append(made)
    if spec.get("namespace"):
        for doc in docs:
            if isinstance(doc, dict) and doc.get("kind") not in CLUSTER_SCOPED:
                doc.setdefault("metadata", {})["namespace"] = spec["namespace"]
    for image in spec.get("images") or []:
        for pod in (p for d in docs for p in pod_specs(d)):
            for container in pod.get("containers", []) + pod.get("initContainers", []):
                if _image_name(str(container.get("image", ""))) == image["name"]:
                    container["image"] = _image_override(str(container["image"]), image)
    return docs


def _image_name(ref: str) -> str:
    ref = ref.split("@")[0]
    head, _, tail = ref.rpartition(":")
    return head if head and "/" not in tail else ref


def _image_override(ref: str, entry: dict[str, Any]) -> str:
    name = entry.get("newName") or _image_name(ref)
    if entry.get("digest"):
        return f"{name}@{entry['digest']}"
    tag = entry.get("newTag") or (ref[len(_image_name(ref)) + 1:] if ref != _image_name(ref)
                                  else "")
    return f"{name}:{tag}" if tag else name


# -- cross-checks ----------------------------------------------------------------------


def pod_specs(doc: Any) -> list[dict[str, Any]]:
    if not isinstance(doc, dict) or not isinstance(doc.get("spec"), dict):
        return []
    if doc.get("kind") == "Pod":
        return [doc["spec"]]
    if doc.get("kind") == "CronJob":
        doc = {"spec": doc["spec"].get("jobTemplate", {}).get("spec", {}), "kind": "Job"}
    if doc.get("kind") in POD_TEMPLATE_KINDS:
        spec = doc["spec"].get("template", {}).get("spec")
        return [spec] if isinstance(spec, dict) else []
    return []


class Index:
    """The rendered objects by kind, namespace and name, and the example Secrets' keys;
    collects ``(object, problem)`` for each reference that names nothing."""

    def __init__(self, docs: list[Any], secrets: dict[tuple[str, str], set[str]]) -> None:
        self.objects: list[dict[str, Any]] = [
            d for d in docs if isinstance(d, dict) and isinstance(d.get("metadata"), dict)]
        self.secrets = secrets
        self.problems: list[tuple[str, str]] = []

    def get(self, kind: str, namespace: str, name: Any) -> dict[str, Any] | None:
        return next((d for d in self.objects if d.get("kind") == kind
                     and namespace_of(d) == namespace and d["metadata"].get("name") == name),
                    None)

    def config_map(self, doc: dict[str, Any], name: Any, key: Any = None, where: str = "") -> None:
        found = self.get("ConfigMap", namespace_of(doc), name)
        if found is None:
            self.problems.append((kind_name(doc), f"{where}ConfigMap {name} is not rendered"))
        elif key is not None and key not in (found.get("data") or {}):
            self.problems.append((kind_name(doc), f"{where}ConfigMap {name} has no key {key}"))

    def secret(self, doc: dict[str, Any], name: Any, key: Any = None, where: str = "") -> None:
        keys = self.secrets.get((namespace_of(doc), str(name)))
        if keys is None:
            self.problems.append((kind_name(doc), f"{where}Secret {name} is in no *.example.yaml"))
        elif key is not None and key not in keys:
            self.problems.append((kind_name(doc), f"{where}Secret {name}'s example has no "
                                                  f"key {key}"))

    def selects(self, doc: dict[str, Any], selector: dict[str, Any]) -> None:
        if not any(namespace_of(d) == namespace_of(doc) and selector.items() <= _pod_labels(d).items()
                   for d in self.objects if pod_specs(d)):
            self.problems.append((kind_name(doc), f"selects no pod template ({selector})"))


def namespace_of(doc: dict[str, Any]) -> str:
    return str(doc["metadata"].get("namespace", "default"))


def _pod_labels(doc: dict[str, Any]) -> dict[str, Any]:
    labels = doc["spec"].get("template", {}).get("metadata", {}).get("labels")
    return labels if isinstance(labels, dict) else {}


def _check_pod(index: Index, doc: dict[str, Any], pod: dict[str, Any]) -> None:
    volumes = {v.get("name"): v for v in pod.get("volumes") or []}
    claims = {c["metadata"]["name"] for c in doc["spec"].get("volumeClaimTemplates") or []}
    for volume in volumes.values():
        if "configMap" in volume:
            index.config_map(doc, volume["configMap"].get("name"), where="volume: ")
        if "secret" in volume:
            index.secret(doc, volume["secret"].get("secretName"), where="volume: ")
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        where = f"container {container.get('name')}: "
        for source in container.get("envFrom") or []:
            if "configMapRef" in source:
                index.config_map(doc, source["configMapRef"]["name"], where=where)
            if "secretRef" in source:
                index.secret(doc, source["secretRef"]["name"], where=where)
        for env in container.get("env") or []:
            ref = env.get("valueFrom") or {}
            if "configMapKeyRef" in ref:
                index.config_map(doc, ref["configMapKeyRef"]["name"],
                                 ref["configMapKeyRef"]["key"], where)
            if "secretKeyRef" in ref:
                index.secret(doc, ref["secretKeyRef"]["name"], ref["secretKeyRef"]["key"], where)
        for mount in container.get("volumeMounts") or []:
            if mount.get("name") not in volumes and mount.get("name") not in claims:
                index.problems.append((kind_name(doc), f"{where}mounts {mount.get('name')}, "
                                                       "which is no volume"))
        ports = {p.get("name") for p in container.get("ports") or []}
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            port = ((container.get(probe) or {}).get("httpGet") or {}).get("port")
            if isinstance(port, str) and port not in ports:
                index.problems.append((kind_name(doc), f"{where}{probe} names port {port}, "
                                                       "which it does not declare"))


def _check_ingress(index: Index, doc: dict[str, Any], spec: dict[str, Any]) -> None:
    for rule in spec.get("rules") or []:
        for path in (rule.get("http") or {}).get("paths") or []:
            backend = path.get("backend", {}).get("service") or {}
            service = index.get("Service", namespace_of(doc), backend.get("name"))
            port = backend.get("port") or {}
            if service is None:
                index.problems.append((kind_name(doc), f"{path.get('path')}: no Service "
                                                       f"{backend.get('name')}"))
            elif not any(p.get("name") == port["name"] if "name" in port
                         else p.get("port") == port.get("number")
                         for p in service["spec"].get("ports") or []):
                index.problems.append((kind_name(doc), f"{path.get('path')}: Service "
                                                       f"{backend.get('name')} has no port {port}"))


def _check_keda(index: Index, doc: dict[str, Any], spec: dict[str, Any]) -> None:
    namespace = namespace_of(doc)
    if doc["kind"] == "ScaledObject":
        target = spec.get("scaleTargetRef") or {}
        if index.get(target.get("kind", "Deployment"), namespace, target.get("name")) is None:
            index.problems.append((kind_name(doc), f"scales {target.get('name')}, which is "
                                                   "not rendered"))
        for trigger in spec.get("triggers") or []:
            ref = trigger.get("authenticationRef")
            if ref and index.get(ref.get("kind", "TriggerAuthentication"), namespace,
                                 ref.get("name")) is None:
                index.problems.append((kind_name(doc), f"trigger {trigger.get('name')}: no "
                                                       f"TriggerAuthentication {ref.get('name')}"))
    if doc["kind"] == "TriggerAuthentication":
        for ref in spec.get("secretTargetRef") or []:
            index.secret(doc, ref.get("name"), ref.get("key"), f"{ref.get('parameter')}: ")


def cross_check(docs: list[Any], secrets: dict[tuple[str, str], set[str]]
                ) -> list[tuple[str, str]]:
    """``(object, problem)`` for every reference in ``docs`` that names nothing there
    (or, for a Secret, nothing in ``secrets``: the example Secrets' keys)."""
    index = Index(docs, secrets)
    for doc in index.objects:
        spec: dict[str, Any] = doc["spec"] if isinstance(doc.get("spec"), dict) else {}
        for pod in pod_specs(doc):
            _check_pod(index, doc, pod)
        kind = doc.get("kind")
        if kind == "Service" and spec.get("selector"):
            index.selects(doc, spec["selector"])
        if kind == "PodDisruptionBudget":
            index.selects(doc, (spec.get("selector") or {}).get("matchLabels") or {})
        if kind == "StatefulSet":
            service = index.get("Service", namespace_of(doc), spec.get("serviceName"))
            if service is None or service["spec"].get("clusterIP") != "None":
                index.problems.append((kind_name(doc), f"serviceName {spec.get('serviceName')} "
                                                       "is no headless Service"))
        if kind == "Ingress":
            _check_ingress(index, doc, spec)
        if kind in ("ScaledObject", "TriggerAuthentication"):
            _check_keda(index, doc, spec)
    return index.problems


def example_secrets(documents: list[tuple[Path, Any]]) -> dict[tuple[str, str], set[str]]:
    """``(namespace, name)`` -> keys, of the Secrets in ``*.example.yaml`` files: the
    Secrets an operator creates by hand."""
    found: dict[tuple[str, str], set[str]] = {}
    for path, doc in documents:
        if ".example." in path.name and isinstance(doc, dict) and doc.get("kind") == "Secret":
            meta = doc.get("metadata") or {}
            keys = set(doc.get("data") or {}) | set(doc.get("stringData") or {})
            found[str(meta.get("namespace", "default")), str(meta.get("name"))] = keys
    return found


# -- the command -----------------------------------------------------------------------


def check_tree(tree: Path, versions: tuple[str, ...], renderer: str, report: Report) -> None:
    crds = crd_schemas()
    documents: list[tuple[Path, Any]] = []
    for path in yaml_files(tree):
        report.files += 1
        where = str(path.relative_to(tree.parent))
        try:
            docs = load_documents(path)
        except ValueError as exc:
            report.error(where, str(exc))
            continue
        for doc in docs:
            if isinstance(doc, dict) and str(doc.get("apiVersion", "")).startswith(
                    KUSTOMIZE_GROUP + "/"):
                continue  # checked as a kustomization below
            report.documents += 1
            documents.append((path, doc))
            for message in validate_document(doc, versions, crds):
                report.error(f"{where}: {kind_name(doc)}", message)
    secrets = example_secrets(documents)
    folders = sorted({p.parent for p in yaml_files(tree) if kustomization_file(p.parent)})
    for folder in folders:
        kfile = kustomization_file(folder)
        assert kfile is not None
        standins = check_kustomization(kfile, tree, report)
        where = f"{folder.relative_to(tree.parent)} (rendered)"
        try:
            rendered, by = render(folder, tree, renderer, standins)
        except ValueError as exc:
            report.error(where, str(exc))
            continue
        report.notes.append(f"{folder.relative_to(tree.parent)}: {len(rendered)} objects "
                            f"rendered by {by}")
        report.rendered += len(rendered)
        for doc in rendered:
            for message in validate_document(doc, versions, crds):
                report.error(f"{where}: {kind_name(doc)}", message)
        for obj, problem in cross_check(rendered, secrets):
            report.error(f"{where}: {obj}", problem)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.k8s_validate",
        description="Validate Kubernetes manifests against Kubernetes' and KEDA's schemas.")
    parser.add_argument("trees", nargs="*", type=Path, default=[DEFAULT_TREE],
                        help="folders of manifests (default: deploy/k8s)")
    parser.add_argument("-k", "--kubernetes-version", action="append", dest="versions",
                        help=f"a Kubernetes release (repeat; default: {', '.join(DEFAULT_VERSIONS)})")
    parser.add_argument("--renderer", choices=("auto", "kustomize", "kubectl", "builtin"),
                        default="auto", help="how kustomizations are rendered (default: "
                        "kustomize or kubectl when installed, else built-in)")
    args = parser.parse_args(argv)
    versions = tuple(args.versions or DEFAULT_VERSIONS)
    report = Report()
    try:
        check_versions(versions)
        for tree in args.trees:
            if not tree.is_dir():
                raise BadInput(f"{tree}: no such folder")
            if not yaml_files(tree):
                raise BadInput(f"{tree}: no YAML files")
            check_tree(tree.resolve(), versions, args.renderer, report)
    except BadInput as exc:
        print(f"k8s_validate: error: {exc}", file=sys.stderr)
        return 2
    for note in report.notes:
        print(f"note: {note}")
    for line in report.errors:
        print(line)
    verdict = f"{len(report.errors)} error(s)" if report.errors else "ok"
    print(f"k8s: {report.files} files, {report.documents} documents, {report.rendered} "
          f"rendered, Kubernetes {', '.join(versions)} and KEDA's CRDs: {verdict}")
    return 1 if report.errors else 0


if __name__ == "__main__":
    sys.exit(main())
