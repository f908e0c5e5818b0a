"""deploy/k8s describes the service on a cluster: what it names (queues, routes, settings,
time limits) is what the code has, and tools/k8s_validate.py, which checks it in
`make lint`, refuses what is broken. No cluster and no KEDA run here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from judge.settings import REPO_ROOT, Settings
from service.queue import GRADE_TASK, GRADING_QUEUES, make_celery, publish
from service.settings import ServiceSettings
from tests_support import FIXTURE_PROBLEMS
from tools import k8s_validate
from workers.isolation import grading_sandbox

K8S = REPO_ROOT / "deploy" / "k8s"


def documents(folder: Path = K8S) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(folder.rglob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


@pytest.fixture(scope="module")
def objects() -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in documents()
            if "metadata" in d}


def pod(objects: dict[tuple[str, str], dict[str, Any]], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = objects["Deployment", name]["spec"]["template"]["spec"]
    return spec


def container_env(objects: dict[tuple[str, str], dict[str, Any]],
                  container: dict[str, Any]) -> dict[str, str]:
    """The plain environment a container gets: its ConfigMaps' data and its literal env
    (secret references left out)."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        env.update(objects["ConfigMap", source["configMapRef"]["name"]]["data"])
    env.update({e["name"]: e["value"] for e in container.get("env") or [] if "value" in e})
    return env


def settings_from(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> tuple[Settings,
                                                                                 ServiceSettings]:
    for variable in list(os.environ):
        if variable.startswith("JAXJUDGE_"):
            monkeypatch.delenv(variable)
    for variable, value in env.items():
        monkeypatch.setenv(variable, value)
    return Settings(), ServiceSettings()


def test_keda_scales_on_the_grading_queues(objects: dict[tuple[str, str], dict[str, Any]]
                                           ) -> None:
    scaled = objects["ScaledObject", "jaxjudge-worker"]["spec"]
    assert scaled["scaleTargetRef"]["name"] == "jaxjudge-worker"
    lists = [t["metadata"]["listName"] for t in scaled["triggers"] if t["type"] == "redis"]
    assert sorted(lists) == sorted(GRADING_QUEUES)
    # The worker it scales consumes exactly those queues.
    args = pod(objects, "jaxjudge-worker")["containers"][0]["args"]
    assert sorted(args[args.index("-Q") + 1].split(",")) == sorted(GRADING_QUEUES)
    # minReplicaCount 1: /readyz needs a live worker.
    assert scaled["minReplicaCount"] >= 1
    # The database index is the one of the Redis URL the pods get.
    example = objects["Secret", "jaxjudge"]["stringData"]
    database = urlsplit(example["REDIS_URL"]).path.strip("/") or "0"
    assert {t["metadata"]["databaseIndex"] for t in scaled["triggers"]} == {database}
    # The password reaches KEDA from the Secret, not from the manifest.
    for trigger in scaled["triggers"]:
        assert "password" not in trigger["metadata"]
        auth = objects["TriggerAuthentication", trigger["authenticationRef"]["name"]]
        refs = {r["parameter"]: r for r in auth["spec"]["secretTargetRef"]}
        assert refs["password"]["name"] == "jaxjudge"
        assert refs["password"]["key"] in example


@pytest.mark.service
def test_a_queued_grading_is_in_the_list_keda_reads(
        objects: dict[tuple[str, str], dict[str, Any]], redis_server: Any,
        tmp_path: Path) -> None:
    """kombu's Redis transport keeps each queue as a list named after it: a grading sent
    the way the API sends it is counted by LLEN of the trigger's listName."""
    client = redis_server.client()
    client.flushall()
    celery = make_celery(ServiceSettings(var=tmp_path, redis_url=redis_server.url))
    triggers = objects["ScaledObject", "jaxjudge-worker"]["spec"]["triggers"]
    try:
        for queue in GRADING_QUEUES:
            publish(celery, GRADE_TASK, ["s-1"], queue=queue, timeout=2.0)
            publish(celery, GRADE_TASK, ["s-2"], queue=queue, timeout=2.0)
        for trigger in triggers:
            assert client.llen(trigger["metadata"]["listName"]) == 2, trigger["name"]
    finally:
        client.flushall()


def test_each_workload_runs_what_compose_runs(
        objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    """The same commands as compose.yaml's services: each of compose's arguments is there,
    in the same order (the API may add some of its own)."""
    compose = yaml.safe_load((REPO_ROOT / "compose.yaml").read_text())["services"]
    for service, deployment in (("api", "jaxjudge-api"), ("worker", "jaxjudge-worker"),
                                ("webhooks", "jaxjudge-webhooks"),
                                ("sweeper", "jaxjudge-sweeper")):
        args = pod(objects, deployment)["containers"][0]["args"]
        want = iter(args)
        assert all(part in want for part in compose[service]["command"]), (service, args)
    job = objects["Job", "jaxjudge-migrate"]["spec"]["template"]["spec"]["containers"][0]
    assert job["args"] == compose["migrate"]["command"]
    builder = pod(objects, "jaxjudge-worker")["initContainers"][0]
    assert builder["args"] == compose["sandbox-image"]["command"]


def test_the_sweeper_runs_once(objects: dict[tuple[str, str], dict[str, Any]]) -> None:
    sweeper = objects["Deployment", "jaxjudge-sweeper"]["spec"]
    assert sweeper["replicas"] == 1
    assert sweeper["strategy"]["type"] == "Recreate"
    assert sweeper["template"]["spec"]["containers"][0]["args"] == [
        "python", "-m", "workers.sweeper"]
    assert ("ScaledObject", "jaxjudge-sweeper") not in objects


def test_worker_waits_for_its_gradings_on_stop(
        objects: dict[tuple[str, str], dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    spec = pod(objects, "jaxjudge-worker")
    _, service = settings_from(container_env(objects, spec["containers"][0]), monkeypatch)
    assert spec["terminationGracePeriodSeconds"] > service.soft_time_limit_seconds
    assert spec["terminationGracePeriodSeconds"] > service.time_limit_seconds


def test_worker_grades_in_the_zygote_sandbox_with_what_it_mounts(
        objects: dict[tuple[str, str], dict[str, Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's settings parsed as the worker parses them, and each path they name
    is a mount of the right volume: the engine's socket, the seccomp profile from the
    generated ConfigMap, the node's control groups read-only."""
    spec = pod(objects, "jaxjudge-worker")
    (worker,) = spec["containers"]
    judge, service = settings_from(container_env(objects, worker), monkeypatch)
    assert judge.sandbox == "zygote" and judge.zygote_accounting == "container"
    assert service.insecure_unsandboxed_grading is False
    assert grading_sandbox(judge, False) == "zygote"
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in worker["volumeMounts"]}

    socket = urlsplit(judge.docker_host).path
    assert volumes[mounts[socket]["name"]]["hostPath"] == {"path": "/var/run/docker.sock",
                                                           "type": "Socket"}
    profile = mounts[str(judge.docker_seccomp_profile.parent)]
    assert profile["readOnly"] is True
    assert volumes[profile["name"]]["configMap"]["name"] == "jaxjudge-zygote-seccomp"
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    (generator,) = kustomization["configMapGenerator"]
    assert generator["name"] == "jaxjudge-zygote-seccomp"
    assert generator["files"] == [judge.docker_seccomp_profile.name]
    cgroup = mounts[str(judge.cgroup_root)]
    assert cgroup["readOnly"] is True
    assert volumes[cgroup["name"]]["hostPath"]["path"] == "/sys/fs/cgroup"

    # Root with only SETUID and SETGID (the entrypoint drops to 10100), on the tainted
    # grading nodes; the sandbox image built first, through the same socket.
    security = worker["securityContext"]
    assert security["capabilities"] == {"drop": ["ALL"], "add": ["SETUID", "SETGID"]}
    assert security["allowPrivilegeEscalation"] is False
    assert security["readOnlyRootFilesystem"] is True
    assert spec["nodeSelector"] == {"jaxjudge.org/grading": "true"}
    assert [t["key"] for t in spec["tolerations"]] == ["jaxjudge.org/grading"]
    (builder,) = spec["initContainers"]
    assert builder["args"] == ["build-sandbox-image"]
    assert {m["mountPath"] for m in builder["volumeMounts"]} >= {socket}
    assert "grader@$HOSTNAME" in " ".join(worker["livenessProbe"]["exec"]["command"])
    assert "grader@%h" in worker["args"]


def test_only_the_worker_holds_the_node(objects: dict[tuple[str, str], dict[str, Any]]
                                        ) -> None:
    """Every other pod meets Pod Security's `restricted` level: not root, no
    capabilities, no privilege escalation, a read-only root, no host paths."""
    pods = {name: d["spec"]["template"]["spec"] for (kind, name), d in objects.items()
            if kind in ("Deployment", "StatefulSet", "Job")}
    assert set(pods) >= {"jaxjudge-api", "jaxjudge-worker", "jaxjudge-webhooks",
                         "jaxjudge-sweeper", "jaxjudge-migrate", "redis", "postgres"}
    for name, spec in pods.items():
        if name == "jaxjudge-worker":
            continue
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert not any("hostPath" in v for v in spec.get("volumes") or []), name
        for container in spec["containers"] + spec.get("initContainers", []):
            security = container["securityContext"]
            assert security["capabilities"] == {"drop": ["ALL"]}, name
            assert security["allowPrivilegeEscalation"] is False, name
            assert security["readOnlyRootFilesystem"] is True, name
    api = pods["jaxjudge-api"]
    assert api["securityContext"]["runAsUser"] == 10100
    assert {v["name"]: v for v in api["volumes"]}["tmp"]["emptyDir"]
    assert [m["mountPath"] for m in api["containers"][0]["volumeMounts"]] == ["/tmp"]


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    from app import create_app

    var = tmp_path_factory.mktemp("var")
    app = create_app(ServiceSettings(var=var, secret_key="k8s-test"),
                     Settings(problems_dir=FIXTURE_PROBLEMS))
    return [rule.rule for rule in app.url_map.iter_rules()]


def test_probes_name_routes_of_the_app(objects: dict[tuple[str, str], dict[str, Any]],
                                       routes: list[str]) -> None:
    (api,) = pod(objects, "jaxjudge-api")["containers"]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert api[probe]["httpGet"]["path"] in routes, probe
    assert api["args"][0] == "gunicorn" and "gevent" in api["args"]
    assert objects["Deployment", "jaxjudge-api"]["spec"]["replicas"] == 2


def test_the_ingress_routes_the_public_prefixes_and_not_metrics(
        objects: dict[tuple[str, str], dict[str, Any]], routes: list[str]) -> None:
    """Every first path segment of the app's routes is routed, except /metrics; nothing
    routed is not a route."""
    ingress = objects["Ingress", "jaxjudge"]["spec"]
    (rule,) = ingress["rules"]
    paths = {p["path"] for p in rule["http"]["paths"]}
    prefixes = {"/" + r.split("/")[1] for r in routes}
    assert "/metrics" in prefixes
    assert paths == prefixes - {"/metrics"}
    # The public host is the one the settings build LTI URLs from, and TLS covers it.
    public = urlsplit(objects["ConfigMap", "jaxjudge-config"]["data"]["JAXJUDGE_PUBLIC_URL"])
    assert public.scheme == "https" and rule["host"] == public.hostname
    assert [public.hostname] == ingress["tls"][0]["hosts"]


def test_every_setting_named_is_a_real_one() -> None:
    """Every JAXJUDGE_* name in the manifests (keys, env, comments) is a settings field."""
    fields = set(Settings.model_fields) | set(ServiceSettings.model_fields)
    names = set()
    for path in K8S.rglob("*.yaml"):
        names |= set(re.findall(r"JAXJUDGE_([A-Z0-9_]+)", path.read_text()))
    assert {"PUBLIC_URL", "TRUSTED_PROXY_HOPS", "SANDBOX", "CGROUP_ROOT", "DATABASE_URL",
            "REDIS_URL", "SECRET_KEY", "VAR"} <= names
    assert {n for n in names if n.lower() not in fields} == set()


# -- the validator ---------------------------------------------------------------------

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
        - name: web
          image: example/web:1
"""


def write_tree(tmp_path: Path, files: dict[str, str]) -> Path:
    tree = tmp_path / "k8s"
    tree.mkdir()
    for name, text in files.items():
        (tree / name).write_text(text)
    return tree


def run_validator(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = k8s_validate.main(["--renderer", "builtin", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_the_validator_accepts_a_valid_tree(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path, {"web.yaml": DEPLOYMENT})
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 0, out
    assert out.splitlines()[-1].endswith(": ok")


def test_the_validator_rejects_a_broken_manifest(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    tree = write_tree(tmp_path, {
        "typo.yaml": DEPLOYMENT.replace("replicas: 1", "replica: 1"),
        "type.yaml": DEPLOYMENT.replace("replicas: 1", "replicas: two"),
        "yaml.yaml": "apiVersion: v1\nkind: [ConfigMap\n"})
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 1
    errors = [line for line in out.splitlines() if line.startswith("ERROR")]
    assert any("typo.yaml" in e and "'replica' was unexpected" in e and "1.33" in e
               and "1.37" in e for e in errors), out
    assert any("type.yaml" in e and "spec.replicas" in e and "'two'" in e for e in errors), out
    assert any("yaml.yaml" in e and "not YAML" in e for e in errors), out


def test_the_validator_rejects_an_unknown_kind(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """kubernetes-validate only warns where it has no schema; here that is an error, for a
    misspelt kind, a custom resource without a vendored CRD, and a KEDA kind KEDA lacks."""
    tree = write_tree(tmp_path, {
        "misspelt.yaml": DEPLOYMENT.replace("kind: Deployment", "kind: Deploymnet"),
        "custom.yaml": "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        "keda.yaml": "apiVersion: keda.sh/v1alpha1\nkind: ScaledThing\nmetadata: {name: s}\n"})
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 1
    for name in ("misspelt.yaml", "custom.yaml", "keda.yaml"):
        assert any(name in line and "unknown kind" in line for line in out.splitlines()), out


def test_the_validator_checks_keda_objects_against_the_crds(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scaled = (K8S / "worker-scaling.yaml").read_text()
    broken = (scaled.replace("minReplicaCount: 1", "minReplicas: 1")
              .replace('listLength: "4"', "listLength: 4"))
    tree = write_tree(tmp_path, {"scaling.yaml": broken})
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 1
    assert "'minReplicas' was unexpected" in out
    assert "listLength: 4 is not of type 'string'" in out


def test_the_validator_checks_a_kustomization(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """What it lists exists, what lies beside it is listed, and what it renders refers to
    things that exist."""
    service = ("apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec:\n"
               "  selector: {app: webb}\n  ports: [{port: 80}]\n")
    tree = write_tree(tmp_path, {
        "kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\n"
                              "kind: Kustomization\nnamespace: ns\n"
                              "resources: [web.yaml, service.yaml, gone.yaml]\n",
        "web.yaml": DEPLOYMENT, "service.yaml": service,
        "forgotten.yaml": DEPLOYMENT.replace("name: web\nspec", "name: other\nspec")})
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 1
    assert "resource gone.yaml: no such file" in out
    assert "forgotten.yaml: not among kustomization.yaml's resources" in out
    # gone.yaml stops the rendering; without it, the Service's selector matches nothing.
    (tree / "kustomization.yaml").write_text(
        (tree / "kustomization.yaml").read_text().replace(", gone.yaml", ""))
    (tree / "forgotten.yaml").unlink()
    status, out, _ = run_validator(capsys, str(tree))
    assert status == 1
    assert "Service/web: selects no pod template" in out


def test_the_validator_refuses_bad_input_in_one_line(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_validator(capsys, str(tmp_path / "nothing"))
    assert (status, out) == (2, "")
    assert err.count("\n") == 1 and "no such folder" in err
    status, out, err = run_validator(capsys, "-k", "1.99", str(K8S))
    assert status == 2 and "1.99" in err and err.count("\n") == 1


def test_the_manifests_validate(capsys: pytest.CaptureFixture[str]) -> None:
    """As `make lint` runs it (kustomize or kubectl where installed), and with the
    built-in renderer, which must give the same objects."""
    assert k8s_validate.main([]) == 0, capsys.readouterr().out
    assert k8s_validate.main(["--renderer", "builtin"]) == 0, capsys.readouterr().out
    capsys.readouterr()


def test_the_builtin_renderer_renders_what_kustomize_renders(tmp_path: Path) -> None:
    tree = tmp_path / "k8s"
    shutil.copytree(K8S, tree)
    (tree / "zygote-seccomp.json").write_text(k8s_validate._standin_seccomp())

    def summary(docs: list[Any]) -> set[tuple[str, str, str, str]]:
        """kind, namespace, name (kustomize's hash suffix of generated names dropped) and
        images of each object."""
        out = set()
        for d in docs:
            images = ",".join(c["image"] for p in k8s_validate.pod_specs(d)
                              for c in p["containers"] + p.get("initContainers", []))
            name = re.sub(r"-[a-z0-9]{10}$", "", d["metadata"]["name"]) \
                if d["kind"] == "ConfigMap" else d["metadata"]["name"]
            out.add((d["kind"], d["metadata"].get("namespace", ""), name, images))
        return out

    for folder in (tree, tree / "datastores"):
        builtin = k8s_validate.builtin_render(folder, tree, 0)
        assert ("Deployment" in {d["kind"] for d in builtin}) or folder.name == "datastores"
        assert all(d["metadata"].get("namespace") == "jaxjudge" for d in builtin
                   if d["kind"] != "Namespace")
        command = k8s_validate.renderer_command("auto")
        if command is None:
            continue  # no kustomize or kubectl here: the built-in one is all there is
        done = subprocess.run([*command, str(folder)], capture_output=True, text=True,
                              check=True, timeout=120)
        assert summary(builtin) == summary(list(yaml.safe_load_all(done.stdout)))
    images = {c["image"] for d in k8s_validate.builtin_render(tree, tree, 0)
              for p in k8s_validate.pod_specs(d) for c in p["containers"]}
    assert images == {"registry.example.edu/jaxjudge/service:0.1.0"}
