"""Public keys and a certificate for the tests: made once with ``ssh-keygen`` and
``openssl req -x509`` (their private halves thrown away), with the fingerprints those
tools printed for them."""

from __future__ import annotations

ED25519 = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBhk6t6t6UHun/GmVSPXMIGczM1bdgEBC8ngA1YbYMvd"
           " alice@example")
RSA_1024 = ("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAAgQDVOtv4sxkgDJutbW188KUdztwoOJC86i+jxJuGYVb"
            "EdSFpkFDq1KQxkkUxjAE+BoBT6Y+GyOmwd/Tt7R3oUG4YBvNVU4y8ipnHxv64sZAZNWqtWKrk/quLf"
            "E/JD3beZNzFtO08kyUPR1YkAbu37xPxC5sotP6J5WW/XXrdClYgDQ== bob")
ECDSA = ("ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBOLm5Iev"
         "YgyNjVvQgcSxgYgtqjnR83sxbb40gf5EugJQ04C/dDNRfmLh9JFAMAfE5lSOfl2SvR03XT8YyzTsYK8=")
CERTIFICATE = """-----BEGIN CERTIFICATE-----
MIIBhDCCASugAwIBAgIUYMHEi94p8CDCQ+QFrLhANw+RXOEwCgYIKoZIzj0EAwIw
FzEVMBMGA1UEAwwMbW9vcmFnZS10ZXN0MCAXDTI2MTEyNjE4MTAxNloYDzIxMjYx
MTAyMTgxMDE2WjAXMRUwEwYDVQQDDAxtb29yYWdlLXRlc3QwWTATBgcqhkjOPQIB
BggqhkjOPQMBBwNCAASgsBBVgbZah0GJ6qeM2s+vEuoSze0EaOe8nrI9X/aDLhpS
lNM0m+WDpiNPP18P9/b+esESV6od++sICObQBsJPo1MwUTAdBgNVHQ4EFgQUS2FD
aAt1DFNJ5/3vbweOhbb2tLcwHwYDVR0jBBgwFoAUS2FDaAt1DFNJ5/3vbweOhbb2
tLcwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNHADBEAiBtT/8J73fI0+Xt
TY6UsK47VsBbG8eVmKynTJEiUFNUigIgYsHaFeBK+fdmCO1ED75dGdny0hqU8PaG
b8p+ib+rGyQ=
-----END CERTIFICATE-----
"""

ED25519_FINGERPRINT = "7f:bb:0e:e7:85:4b:a0:22:eb:3e:5b:cd:4a:c7:30:54"
RSA_1024_FINGERPRINT = "60:fd:f9:22:80:70:cf:22:cf:ce:7e:f9:b0:d9:f6:6d"
ECDSA_FINGERPRINT = "ae:f6:01:63:f0:23:63:28:f1:ed:be:d4:72:3c:ab:92"
CERTIFICATE_FINGERPRINT = "da:59:db:20:9f:69:af:87:e3:70:76:90:21:96:ce:c5:3e:f4:4f:f3"
