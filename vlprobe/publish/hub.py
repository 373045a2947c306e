"""The only part that touches the network: :func:`publish`, ``create_repo`` + ``upload_folder``."""

from __future__ import annotations

from huggingface_hub import HfApi, get_token

from ..errors import first_line
from .plan import PublishError, UploadPlan


def publish(
    plan: UploadPlan,
    *,
    private: bool = False,
    token: str | None = None,
    dry_run: bool = False,
    commit_message: str | None = None,
) -> str | None:
    """Create the repo (``exist_ok=True``) and upload the planned files; returns the commit URL (``dry_run``: none)."""
    token = token or get_token()
    if dry_run:
        print("dry run: would create (if absent) and upload to the " + plan.describe(private=private))
        found = "found" if token else "NOT found (pass --token, set HF_TOKEN, or run `hf auth login`)"
        print(f"token: {found}")
        print("nothing was uploaded")
        return None
    if not token:
        raise PublishError(
            "no Hugging Face token: pass --token, set HF_TOKEN, or log in once with `hf auth login` "
            "(a token with write access to the target namespace)"
        )
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled
    from huggingface_hub.utils import httpx

    api = HfApi(token=token)
    message = commit_message or f"Upload {plan.repo_type} with vlprobe publish"
    try:
        if plan.repo_type == "space":
            api.create_repo(plan.repo_id, repo_type="space", exist_ok=True, private=private, space_sdk=plan.space_sdk)
        else:
            api.create_repo(plan.repo_id, repo_type=plan.repo_type, exist_ok=True, private=private)
        info = api.upload_folder(
            repo_id=plan.repo_id, folder_path=str(plan.folder), repo_type=plan.repo_type,
            allow_patterns=plan.allow_patterns, ignore_patterns=plan.ignore_patterns or None,
            commit_message=message,
        )
    except OfflineModeIsEnabled:
        raise PublishError(
            "offline mode is on (HF_HUB_OFFLINE=1), so nothing can be uploaded; unset HF_HUB_OFFLINE "
            "on a machine with network access, or use --dry-run to check the folder"
        ) from None
    except HfHubHTTPError as err:
        status = getattr(getattr(err, "response", None), "status_code", None)
        hint = {
            401: "the token was rejected; check it (`hf auth whoami`)",
            403: f"the token may not write to {plan.repo_id.split('/')[0]!r}; use a write token for that namespace",
        }.get(status, "the Hub refused the request")
        raise PublishError(f"{plan.repo_type} repo {plan.repo_id}: {hint} (HTTP {status}: {first_line(err)})") from None
    except (ConnectionError, httpx.TransportError) as err:
        raise PublishError(f"cannot reach the Hub to publish {plan.repo_id}: {first_line(err)}") from None
    url = getattr(info, "commit_url", None) or str(info)
    print(f"uploaded {len(plan.files)} file(s) to the {plan.repo_type} repo {plan.repo_id}: {url}")
    return url
