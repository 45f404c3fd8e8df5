"""What SiliconFlow's answers mean, shared by its embeddings and rerank adapters.

A 403 from SiliconFlow is rarely a bad key (that is a 401): its API answers 403 when the
account may not use the model, most often because the model requires real-name
verification (实名认证) of the account, or a balance the account lacks.
"""

from __future__ import annotations

from urllib.parse import urlsplit

HOSTS = ("siliconflow.cn", "siliconflow.com")

FORBIDDEN_REMEDIATION = (
    "SiliconFlow answers 403 when the account may not use this model, usually because the model "
    "requires real-name verification (实名认证): complete it at https://cloud.siliconflow.cn/account/authentication, "
    "or check the account's balance, or pick a model the account may use. A wrong key is a 401, not a 403."
)


def is_siliconflow(provider: str | None, endpoint: str) -> bool:
    host = (urlsplit(endpoint).hostname or "").lower()
    return provider == "siliconflow" or any(host == h or host.endswith("." + h) for h in HOSTS)


def forbidden_remediation(provider: str | None, endpoint: str) -> str | None:
    """The remediation for an HTTP 403 from this provider (None when it is not SiliconFlow)."""
    return FORBIDDEN_REMEDIATION if is_siliconflow(provider, endpoint) else None
