"""Makes an RSA key for Warden's `private_key_jwt` (RS256) test, with the
pinned `cryptography`: writes the private key as PKCS#8 PEM to the file
named by the first argument and prints the public key (PKCS#1 DER, the
form ring verifies with) as hex on stdout."""

import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
with open(sys.argv[1], "wb") as out:
    out.write(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
print(key.public_key().public_bytes(serialization.Encoding.DER, serialization.PublicFormat.PKCS1).hex())
